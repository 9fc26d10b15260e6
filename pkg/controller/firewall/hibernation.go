package firewall

import (
	"context"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// hibernationEnabled tells whether the shoot is to hibernate or hibernates:
// its Cluster's spec.hibernation.enabled, which gardenlet sets before it
// reconciles the Extension to hibernate and clears before it reconciles it to
// wake up. No Cluster (yet): not hibernated.
func (a *actuator) hibernationEnabled(ctx context.Context, namespace string) (bool, error) {
	cluster, err := extensionscontroller.GetCluster(ctx, a.client, namespace)
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return cluster.Shoot != nil && extensionscontroller.IsHibernationEnabled(cluster), nil
}

// replicas is the shoot's number of firewalls: none while it hibernates under
// the release policy (the default, as gardener-extension-provider-metal:
// GetReplicas), so that the manager deletes the firewall, its machine going
// back to the partition and its identity and credentials with it; waking up
// creates a new one with a new identity.
func replicas(policy firewallv1alpha1.HibernationPolicy, hibernated bool) int32 {
	if hibernated && policy != firewallv1alpha1.HibernationKeep {
		return 0
	}
	return 1
}
