package firewall

import (
	"context"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seedhosted"
)

// shootOf is the shoot of the namespace as its Cluster has it; nil without a
// Cluster (yet), an error when the Cluster names no seed.
func (a *actuator) shootOf(ctx context.Context, namespace string) (*gardencorev1beta1.Shoot, error) {
	cluster, err := extensionscontroller.GetCluster(ctx, a.client, namespace)
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if err := seedhosted.Check(cluster, "the firewall's manager, its machine's credentials and the agent's rules live in the seed that hosts the shoot's control plane"); err != nil {
		return nil, err
	}
	return cluster.Shoot, nil
}

// hibernationEnabled tells whether the shoot is to hibernate or hibernates:
// spec.hibernation.enabled, which gardenlet sets before it reconciles the
// Extension to hibernate and clears before it reconciles it to wake up.
func hibernationEnabled(shoot *gardencorev1beta1.Shoot) bool {
	return shoot != nil && v1beta1helper.HibernationIsEnabled(shoot)
}

// replicas is the shoot's number of firewalls: its providerConfig's
// replicas (1 when unset), and none while it hibernates under the release
// policy (the default, as gardener-extension-provider-metal: GetReplicas),
// so that the manager deletes the firewalls, their machines going back to
// the partition and their identities and credentials with them; waking up
// creates new ones with new identities.
func replicas(cfg *firewallv1alpha1.FirewallExtensionConfig, hibernated bool) int32 {
	if hibernated && cfg.Hibernation != firewallv1alpha1.HibernationKeep {
		return 0
	}
	if cfg.Replicas != nil {
		return *cfg.Replicas
	}
	return 1
}
