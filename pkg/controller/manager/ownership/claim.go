// Package ownership decides which objects a FirewallDeployment or a
// FirewallSet owns, adopting orphans the way ReplicaSets adopt Pods.
package ownership

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Claim returns those of candidates (already matched by owner's selector)
// that owner controls, after adopting the ones without a controller: objects
// restored after a migration have none yet. Paused objects, objects being
// deleted and a deleting owner adopt nothing; objects of another controller
// are left alone.
func Claim[T client.Object](ctx context.Context, c client.Client, owner client.Object, candidates []T) ([]T, error) {
	var owned []T
	for _, obj := range candidates {
		ref := metav1.GetControllerOf(obj)
		switch {
		case ref != nil && ref.UID == owner.GetUID():
			owned = append(owned, obj)
		case ref == nil && obj.GetDeletionTimestamp() == nil && owner.GetDeletionTimestamp() == nil && !firewallv1alpha1.IsPaused(obj.GetAnnotations()):
			if err := controllerutil.SetControllerReference(owner, obj, c.Scheme()); err != nil {
				return nil, err
			}
			if err := c.Update(ctx, obj); err != nil {
				return nil, fmt.Errorf("adopting %s: %w", obj.GetName(), err)
			}
			log.FromContext(ctx).Info("Adopted orphan", "name", obj.GetName())
			owned = append(owned, obj)
		}
	}
	return owned, nil
}

// Pointers returns pointers to the items of a list, for Claim.
func Pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
