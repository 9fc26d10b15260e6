package acl

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
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

// gatewayPorts is what of an ingress gateway's Service the shared filters depend on: the ports it
// targets (gardenlet's RemoveHTTPProxyLegacyPort takes 8132 away).
func gatewayPorts(svc *corev1.Service) string {
	return fmt.Sprint(targetPorts(svc))
}

// gatewayServiceToExtension maps an ingress gateway's Service to one acl Extension the gateway
// serves: that reconciliation rebuilds the gateway's shared filters, for every shoot on it, once
// the Service's ports differ from those of the last rebuild. Services of other namespaces (every
// shoot has some) map to nothing at once.
func gatewayServiceToExtension(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		ns := obj.GetNamespace()
		if !strings.HasPrefix(ns, constants.DefaultIngressNamespace) {
			return nil
		}
		list := &extensionsv1alpha1.ExtensionList{}
		if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		quoted := []byte(strconv.Quote(ns))
		for i := range list.Items {
			ex := &list.Items[i]
			// The raw status names the namespace before anything is decoded.
			if ex.Spec.Type != constants.ACLExtensionType || ex.DeletionTimestamp != nil || ex.Status.ProviderStatus == nil ||
				!bytes.Contains(ex.Status.ProviderStatus.Raw, quoted) {
				continue
			}
			if st, err := providerstatus.Decode(ex); err == nil && st != nil && slices.Contains(st.IngressNamespaces, ns) {
				return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(ex)}}
			}
		}
		return nil
	}
}
