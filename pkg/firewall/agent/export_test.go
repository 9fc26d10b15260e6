package agent

import (
	"context"
	"time"

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

// AskDistance and DistanceStatus are the agent's distance, for the tests.
var (
	AskDistance    = (*Agent).announceDistance
	DistanceStatus = (*Agent).distanceStatus
)

// AnnounceDistance asks for fw's distance and waits until it was tried: the
// error is that try's.
func AnnounceDistance(a *Agent, ctx context.Context, cfg *agentconfigv1alpha1.Config, fw *fwv1alpha1.Firewall) error {
	a.announceDistance(ctx, cfg, fw)
	if a.distance == nil {
		return nil
	}
	a.distance.wait()
	return a.announceDistance(ctx, cfg, nil)
}

// LookForDelivery tells whether the agent, whose seed has failed since
// failingSince (zero: the first failure), asks the shoot for a delivery
// after the seed's error err.
func LookForDelivery(a *Agent, failingSince time.Time, err error) bool {
	a.seedFailingSince = failingSince
	return a.lookForDelivery(err)
}
