package framework

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// AgentTokens lists the bootstrap token Secrets the extension minted for a
// shoot namespace's firewalls (in kube-system of the seed).
func AgentTokens(ctx context.Context, c client.Client, namespace string) ([]corev1.Secret, error) {
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{constants.LabelFirewallNamespace: namespace}); err != nil {
		return nil, err
	}
	return list.Items, nil
}
