package framework

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// Firewalls lists the Firewalls of a shoot namespace in a seed.
func Firewalls(ctx context.Context, c client.Client, namespace string) ([]firewallv1alpha1.Firewall, error) {
	list := &firewallv1alpha1.FirewallList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// BootNamespace holds the firewalls' boot ServiceAccounts in a test seed, as
// the extension's own namespace does in a real one.
const BootNamespace = "extension-firewall"

// BootServiceAccounts lists the boot ServiceAccounts the extension made for a
// shoot namespace's firewalls: while one exists, its firewall's boot token
// authenticates.
func BootServiceAccounts(ctx context.Context, c client.Client, namespace string) ([]corev1.ServiceAccount, error) {
	list := &corev1.ServiceAccountList{}
	if err := c.List(ctx, list, client.InNamespace(BootNamespace), client.MatchingLabels{constants.LabelFirewallNamespace: namespace}); err != nil {
		return nil, err
	}
	return list.Items, nil
}
