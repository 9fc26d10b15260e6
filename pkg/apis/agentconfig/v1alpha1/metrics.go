package v1alpha1

import (
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Metrics serves the agent's metrics to the shoot on its internal address.
// It is the firewall API's AgentMetrics, which a shoot's providerConfig sets
// (metrics) and the extension copies into the agent's config.
type Metrics = fwv1alpha1.AgentMetrics

// DefaultMetricsPort is the port of the metrics on the internal address.
const DefaultMetricsPort = fwv1alpha1.MetricsServicePort
