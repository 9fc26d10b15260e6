package credentials

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewShootDeliveryWith returns a ShootDelivery that reaches the shoot of a
// seed namespace through shootClientFor instead of its kubeconfig secret.
func NewShootDeliveryWith(shootClientFor func(ctx context.Context, namespace string) (client.Client, error)) *ShootDelivery {
	return &ShootDelivery{shootClientFor: shootClientFor}
}
