package v1alpha1

// Metrics serves the agent's metrics to the shoot: on the firewall's address
// in the internal network, limited by the agent's table to the internal
// prefixes arriving on that network's interface. The external interfaces
// never answer.
type Metrics struct {
	// InternalNetwork is the metal network ID (one of networks) that faces
	// the shoot's nodes; the agent listens on its interface's first address
	// and publishes it in the shoot as an EndpointSlice of the Service
	// firewall/firewall-agent-metrics.
	InternalNetwork string `json:"internalNetwork"`
	// Port is the TCP port; 2112 when zero.
	Port uint16 `json:"port,omitempty"`
}

// DefaultMetricsPort is the port of the metrics on the internal address.
const DefaultMetricsPort = 2112

// ListenPort is the metrics port, the default when not set.
func (m *Metrics) ListenPort() uint16 {
	if m == nil || m.Port == 0 {
		return DefaultMetricsPort
	}
	return m.Port
}
