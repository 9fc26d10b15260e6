package v1alpha1

// The agent's metrics in the shoot: the extension keeps the Service (no
// selector) in FirewallMonitorNamespace; each firewall's agent writes one
// EndpointSlice of it, named after the firewall, with its internal address.
const (
	// MetricsServiceName is the Service the shoot's Prometheus discovers.
	MetricsServiceName = "firewall-agent-metrics"
	// MetricsPortName names the port in the Service and the EndpointSlices.
	MetricsPortName = "metrics"
	// MetricsServicePort is the Service's port; the EndpointSlices carry
	// the port the agents listen on.
	MetricsServicePort = 2112
)

// AgentMetrics serves the agent's metrics to the shoot: on the firewall's
// address in the internal network, limited by the agent's table to the
// internal prefixes arriving on that network's interface. The external
// interfaces never answer.
type AgentMetrics struct {
	// InternalNetwork is the metal network ID that faces the shoot's nodes;
	// the agent listens on its interface's first address and publishes it
	// in the shoot as an EndpointSlice of the Service
	// firewall/firewall-agent-metrics. In a providerConfig it is one of
	// networks.
	InternalNetwork string `json:"internalNetwork"`
	// Port is the TCP port; 2112 when zero.
	// +optional
	Port uint16 `json:"port,omitempty"`
}

// ListenPort is the metrics port, the default when not set.
func (m *AgentMetrics) ListenPort() uint16 {
	if m == nil || m.Port == 0 {
		return MetricsServicePort
	}
	return m.Port
}
