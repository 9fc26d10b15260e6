package v1alpha1

// TrafficStatistics are the bytes and packets through the firewall, by side.
type TrafficStatistics struct {
	// Internal is the interface facing the shoot's nodes: In is what the
	// nodes sent (towards the outside), Out what reached them.
	Internal DirectionStatistics `json:"internal"`
	// External are the other interfaces: In is what came from outside, Out
	// what left.
	External DirectionStatistics `json:"external"`
}

// DirectionStatistics count one side's traffic in both directions.
type DirectionStatistics struct {
	// InBytes and InPackets were received on the side's interfaces.
	InBytes   uint64 `json:"inBytes"`
	InPackets uint64 `json:"inPackets"`
	// OutBytes and OutPackets were sent on them.
	OutBytes   uint64 `json:"outBytes"`
	OutPackets uint64 `json:"outPackets"`
}

// DeviceStatistics are one interface's counters since it came up.
type DeviceStatistics struct {
	// Name is the interface's name.
	Name string `json:"name"`
	// Internal is set on the interface facing the shoot's nodes.
	// +optional
	Internal bool `json:"internal,omitempty"`
	// RxBytes, RxPackets, RxErrors and RxDropped count what was received.
	RxBytes   uint64 `json:"rxBytes"`
	RxPackets uint64 `json:"rxPackets"`
	RxErrors  uint64 `json:"rxErrors"`
	RxDropped uint64 `json:"rxDropped"`
	// TxBytes, TxPackets, TxErrors and TxDropped count what was sent.
	TxBytes   uint64 `json:"txBytes"`
	TxPackets uint64 `json:"txPackets"`
	TxErrors  uint64 `json:"txErrors"`
	TxDropped uint64 `json:"txDropped"`
}
