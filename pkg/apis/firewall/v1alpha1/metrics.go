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
