package agent

import (
	"slices"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/netdev"
)

// deviceSet is which interfaces the agent reports and which of them faces
// the shoot; kept per config, read by scrapes on their own goroutine.
type deviceSet struct {
	names    []string
	internal string
}

// devicesOf are the config's interfaces: those of its networks (all but the
// loopback when there are none) and the metrics' internal one.
func devicesOf(cfg *agentconfigv1alpha1.Config) *deviceSet {
	d := &deviceSet{}
	for _, n := range cfg.Networks {
		d.names = append(d.names, n.Interface)
	}
	d.internal, _ = metricsInterface(cfg)
	return d
}

// readDevices reads the devices' counters through read (netdev.Read).
func (d *deviceSet) read(read func([]string) ([]netdev.Stats, error)) ([]fwv1alpha1.DeviceStatistics, error) {
	stats, err := read(d.names)
	if err != nil {
		return nil, err
	}
	out := make([]fwv1alpha1.DeviceStatistics, 0, len(stats))
	for _, s := range stats {
		out = append(out, fwv1alpha1.DeviceStatistics{Name: s.Name, Internal: s.Name == d.internal,
			RxBytes: s.RxBytes, RxPackets: s.RxPackets, RxErrors: s.RxErrors, RxDropped: s.RxDropped,
			TxBytes: s.TxBytes, TxPackets: s.TxPackets, TxErrors: s.TxErrors, TxDropped: s.TxDropped})
	}
	return out, nil
}

// trafficOf sums the devices by side; nil when none faces the shoot, as
// then in and out cannot be told apart.
func trafficOf(devices []fwv1alpha1.DeviceStatistics) *fwv1alpha1.TrafficStatistics {
	if !slices.ContainsFunc(devices, func(d fwv1alpha1.DeviceStatistics) bool { return d.Internal }) {
		return nil
	}
	t := &fwv1alpha1.TrafficStatistics{}
	for _, d := range devices {
		side := &t.External
		if d.Internal {
			side = &t.Internal
		}
		side.InBytes += d.RxBytes
		side.InPackets += d.RxPackets
		side.OutBytes += d.TxBytes
		side.OutPackets += d.TxPackets
	}
	return t
}

// Devices reads the counters of the interfaces of the config last applied:
// the metrics' device source.
func (a *Agent) Devices() ([]fwv1alpha1.DeviceStatistics, error) {
	d := a.devices.Load()
	if d == nil {
		return nil, nil
	}
	return d.read(netdev.Read)
}
