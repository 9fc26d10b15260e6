package firewalldeployment

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// providerFirewallStep is the roll step that waits for provider-metal's firewall.
const providerFirewallStep = "provider-metal's firewall goes first"

// noKindRecheck is how long a seed without firewall-controller-manager's
// FirewallDeployment kind is taken to have none.
const noKindRecheck = 5 * time.Minute

// providerFirewall describes provider-metal's firewall in the namespace
// when it may carry the shoot's traffic: firewall-controller-manager's
// FirewallDeployment asks for replicas or still has some. Its
// firewall-controller announces no distance, which the fabric takes as
// the shortest: a set of this deployment beside it keeps the longest, so
// that the fabric never spreads one connection over both, and takes the
// shortest only once it is gone. Empty when there is none (or no such
// kind: not a metal seed).
func (r *Reconciler) providerFirewall(ctx context.Context, namespace string) (string, error) {
	if until := r.noProviderFirewallKind.Load(); until != nil && r.Clock.Now().Before(*until) {
		return "", nil
	}
	deploy := &unstructured.Unstructured{}
	deploy.SetGroupVersionKind(constants.ProviderFirewallDeploymentGVK)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ProviderFirewallDeploymentName}, deploy); err != nil {
		if meta.IsNoMatchError(err) {
			// Not a metal seed: asked again (API discovery) only now and then.
			until := r.Clock.Now().Add(noKindRecheck)
			r.noProviderFirewallKind.Store(&until)
			return "", nil
		}
		return "", client.IgnoreNotFound(err)
	}
	n := func(path ...string) int64 {
		v, _, _ := unstructured.NestedInt64(deploy.Object, path...)
		return v
	}
	replicas, ready, progressing, unhealthy := n("spec", "replicas"), n("status", "readyReplicas"), n("status", "progressingReplicas"), n("status", "unhealthyReplicas")
	if replicas == 0 && ready == 0 && progressing == 0 && unhealthy == 0 {
		return "", nil
	}
	return fmt.Sprintf("firewall-controller-manager's FirewallDeployment %s/%s: %d replicas, %d ready, %d progressing, %d unhealthy",
		namespace, constants.ProviderFirewallDeploymentName, replicas, ready, progressing, unhealthy), nil
}
