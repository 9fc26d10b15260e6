package agent

import (
	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/netdev"
)

// Exported for the tests.
var (
	MetricsAddress = metricsAddress
	TrafficOf      = trafficOf
)

// ReadDevices reads the devices of cfg through read.
var ReadDevices = func(cfg *agentconfigv1alpha1.Config, read func([]string) ([]netdev.Stats, error)) ([]fwv1alpha1.DeviceStatistics, error) {
	return devicesOf(cfg).read(read)
}

// AnnounceDistance and DistanceStatus are the agent's distance, for the tests.
var (
	AnnounceDistance = (*Agent).announceDistance
	DistanceStatus   = (*Agent).distanceStatus
)
