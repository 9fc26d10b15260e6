package v1alpha1

// FirewallTrafficSpec is the part of a Firewall's spec that the agent turns
// into nftables rules besides the network policies. Firewall embeds it; the
// agent's static source uses it directly.
type FirewallTrafficSpec struct {
	// InternalPrefixes are the networks behind the firewall (the shoot's
	// nodes). Egress rules allow traffic from them, ingress rules to them.
	// +optional
	InternalPrefixes []string `json:"internalPrefixes,omitempty"`
	// EgressRules source-NAT traffic leaving through a network to its IPs.
	// +optional
	EgressRules []EgressRuleSNAT `json:"egressRules,omitempty"`
	// RateLimits limit the ingress bandwidth of a network.
	// +optional
	RateLimits []RateLimit `json:"rateLimits,omitempty"`
}

// EgressRuleSNAT translates the source of traffic leaving through one network
// to one of IPs. The network is named by its metal network ID or, on a local
// machine, directly by the interface.
type EgressRuleSNAT struct {
	// NetworkID is the metal network the traffic leaves through.
	// +optional
	NetworkID string `json:"networkID,omitempty"`
	// Interface is the interface the traffic leaves through.
	// +optional
	Interface string `json:"interface,omitempty"`
	// IPs are the source addresses to translate to; none masquerades to
	// the interface's own address (what the providerConfig accepts too).
	// +optional
	IPs []string `json:"ips,omitempty"`
}

// RateLimit limits the bandwidth arriving on one network.
type RateLimit struct {
	// NetworkID is the metal network to limit.
	// +optional
	NetworkID string `json:"networkID,omitempty"`
	// Interface is the interface to limit.
	// +optional
	Interface string `json:"interface,omitempty"`
	// Rate is the limit in MiB/s.
	Rate uint32 `json:"rate"`
}
