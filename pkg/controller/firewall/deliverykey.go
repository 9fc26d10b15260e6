package firewall

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// deliveryKey is what of a Firewall's delivery key Secret travels in the
// migration state: the private key and the last generation, not the last
// delivery (its token dies with this seed). Nil when the Firewall has none.
func (a *actuator) deliveryKey(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	secret := &corev1.Secret{}
	if err := a.direct.Get(ctx, client.ObjectKey{Namespace: namespace, Name: firewallv1alpha1.DeliveryKeySecretName(name)}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("delivery key of Firewall %s: %w", name, err)
	}
	out := map[string][]byte{}
	for _, k := range []string{firewallv1alpha1.DeliveryKeySecretKey, firewallv1alpha1.DeliveryGenerationSecretKey} {
		if v, ok := secret.Data[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

// restoreDeliveryKey writes a Firewall's delivery key Secret from the state;
// one that exists (a retried restore) stays as it is.
func (a *actuator) restoreDeliveryKey(ctx context.Context, namespace, name string, data map[string][]byte) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: firewallv1alpha1.DeliveryKeySecretName(name), Namespace: namespace,
			Labels: map[string]string{constants.LabelFirewallName: name}},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if err := a.direct.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("restoring the delivery key of Firewall %s: %w", name, err)
	}
	return nil
}
