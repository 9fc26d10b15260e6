package acl

import (
	"context"
	"strings"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// clusterInputs is what of a Cluster the effective allow-list and the restricted hosts depend
// on: the seed's node and pod networks and ingress domain, the shoot's node and egress CIDRs.
// gardenlet rewrites the Cluster on every shoot status change; only these parts matter here.
func clusterInputs(c *extensionsv1alpha1.Cluster) string {
	var parts []string
	if seed, err := extensionscontroller.SeedFromCluster(c); err == nil && seed != nil {
		if seed.Spec.Networks.Nodes != nil {
			parts = append(parts, *seed.Spec.Networks.Nodes)
		}
		parts = append(parts, seed.Spec.Networks.Pods, seedIngressDomain(seed))
	}
	if shoot, err := extensionscontroller.ShootFromCluster(c); err == nil && shoot != nil {
		parts = append(parts, shootCIDRs(shoot)...)
	}
	return strings.Join(parts, "|")
}

// infrastructureInputs is what of an Infrastructure the allow-list depends on.
func infrastructureInputs(infra *extensionsv1alpha1.Infrastructure) string {
	parts := append([]string{}, infra.Status.EgressCIDRs...)
	if infra.Status.Networking != nil {
		parts = append(parts, "nodes")
		parts = append(parts, infra.Status.Networking.Nodes...)
	}
	return strings.Join(parts, "|")
}

// inputsChanged lets through creations and the updates that change inputs(obj).
func inputsChanged[T client.Object](inputs func(T) string) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldObj, ok1 := e.ObjectOld.(T)
			newObj, ok2 := e.ObjectNew.(T)
			return !ok1 || !ok2 || inputs(oldObj) != inputs(newObj)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// clusterToExtensions maps a Cluster (named like the shoot namespace) to the shoot's acl Extensions.
func clusterToExtensions(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		return aclExtensionsIn(ctx, c, obj.GetName())
	}
}

// namespaceToExtensions maps an object in a shoot namespace to the shoot's acl Extensions.
func namespaceToExtensions(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		return aclExtensionsIn(ctx, c, obj.GetNamespace())
	}
}
