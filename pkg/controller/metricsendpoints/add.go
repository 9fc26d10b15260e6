package metricsendpoints

import (
	"context"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// ControllerName is the controller's name in logs and metrics.
const ControllerName = "firewall-metrics-endpoints"

// AddToManager registers the controller: one request per shoot namespace,
// on every Firewall event that can change its slices.
func (r *Reconciler) AddToManager(mgr manager.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	return builder.ControllerManagedBy(mgr).Named(ControllerName).
		Watches(&firewallv1alpha1.Firewall{}, byNamespace, builder.WithPredicates(Changed())).
		// A ManagedResource deleted while its firewalls stay (a deletion
		// that finished late, e.g. behind a hibernated shoot's resource
		// manager, or by hand) is written again.
		Watches(&resourcesv1alpha1.ManagedResource{}, byNamespace, builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
			return obj.GetName() == constants.MetricsManagedResourceName
		}), predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// byNamespace asks for the object's namespace: the controller keeps one
// ManagedResource per shoot namespace.
var byNamespace = handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace()}}}
})

// Changed passes creations, deletions and updates of what the slices
// depend on: the reported address, the deletion, the pause of a migration.
// The agents' heartbeats change nothing else here.
func Changed() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*firewallv1alpha1.Firewall)
			n, ok2 := e.ObjectNew.(*firewallv1alpha1.Firewall)
			if !ok1 || !ok2 {
				return true
			}
			return reported(o) != reported(n) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
				firewallv1alpha1.IsPaused(o.Annotations) != firewallv1alpha1.IsPaused(n.Annotations)
		},
	}
}

func reported(fw *firewallv1alpha1.Firewall) string {
	if fw.Status.AgentStatus == nil {
		return ""
	}
	return fw.Status.AgentStatus.MetricsAddress
}
