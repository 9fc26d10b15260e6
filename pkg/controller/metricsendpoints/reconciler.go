package metricsendpoints

import (
	"context"
	"fmt"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// Reconciler keeps the metrics ManagedResource of one shoot namespace (the
// request's namespace; its name is empty).
type Reconciler struct {
	Client client.Client
}

// Reconcile writes the slices of the namespace's Firewalls that report a
// metrics address, and deletes the ManagedResource when none does (the
// shoot's slices go with it). While any Firewall is paused, a control plane
// migration is under way: the shoot keeps its slices and this seed leaves
// them to the migration (the firewall actuator releases them).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logf.FromContext(ctx)
	fws := &firewallv1alpha1.FirewallList{}
	if err := r.Client.List(ctx, fws, client.InNamespace(req.Namespace)); err != nil {
		return reconcile.Result{}, err
	}
	registry := managedresources.NewRegistry(kubernetes.ShootScheme, kubernetes.ShootCodec, kubernetes.ShootSerializer)
	n := 0
	for i := range fws.Items {
		fw := &fws.Items[i]
		if firewallv1alpha1.IsPaused(fw.Annotations) {
			return reconcile.Result{}, nil
		}
		if fw.DeletionTimestamp != nil {
			continue
		}
		addr, err := metricsAddress(fw)
		if err != nil {
			log.Info("Not publishing the firewall's metrics address", "firewall", fw.Name, "reason", err.Error())
			continue
		}
		if !addr.IsValid() {
			continue
		}
		if err := registry.Add(endpointSlice(fw.Name, addr)); err != nil {
			return reconcile.Result{}, err
		}
		n++
	}
	if n == 0 {
		// From the cache first: most namespaces never had one, and two
		// DELETEs answered 404 per Firewall event would spend the
		// extension's request budget at scale.
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: constants.MetricsManagedResourceName}, &resourcesv1alpha1.ManagedResource{})
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		if err != nil {
			return reconcile.Result{}, err
		}
		if err := managedresources.Delete(ctx, r.Client, req.Namespace, constants.MetricsManagedResourceName, true); err != nil {
			return reconcile.Result{}, fmt.Errorf("deleting the metrics ManagedResource: %w", err)
		}
		return reconcile.Result{}, nil
	}
	data, err := registry.SerializedObjects()
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := managedresources.CreateForShoot(ctx, r.Client, req.Namespace, constants.MetricsManagedResourceName, constants.ManagedResourceOrigin, false, data); err != nil {
		return reconcile.Result{}, fmt.Errorf("metrics ManagedResource: %w", err)
	}
	return reconcile.Result{}, nil
}
