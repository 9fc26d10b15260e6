package firewallmachine

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seal"
)

// Delivery hands a firewall's bootstrap kubeconfig, sealed to its agent's
// key and signed with its delivery key, to an agent whose machine is already
// running, and takes it back once the agent holds its certificate.
type Delivery interface {
	// Deliver writes the signed box into the shoot.
	Deliver(ctx context.Context, namespace, name string, box []byte) error
	// Delivered is what the shoot holds now; nil when nothing.
	Delivered(ctx context.Context, namespace, name string) ([]byte, error)
	Withdraw(ctx context.Context, namespace, name string) error
}

// Data keys of the delivery key Secret that stay in this seed: the last box
// and when its credential expires. What the shoot holds is compared with
// them, never trusted: the shoot's admins can write it.
const (
	deliveryBoxKey     = "delivery"
	deliveryExpiresKey = "expires"
)

// ensureDeliveryKey gives the Firewall a delivery key: the private half in a
// seed Secret the agent cannot read, the public half on the Firewall, where
// its agent pins it. A Firewall that has one (restored ones included, whose
// Secret the restore wrote first) keeps it.
func (r *Reconciler) ensureDeliveryKey(ctx context.Context, fw *firewallv1alpha1.Firewall) error {
	if fw.Annotations[firewallv1alpha1.AnnotationDeliveryKey] != "" {
		return nil
	}
	secret, err := r.deliveryKeySecret(ctx, fw)
	var key *ecdsa.PrivateKey
	switch {
	case err == nil:
		// An earlier run died between the Secret and the annotation.
		if key, err = parseDeliveryKey(secret); err != nil {
			return err
		}
	case apierrors.IsNotFound(err):
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return err
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: firewallv1alpha1.DeliveryKeySecretName(fw.Name), Namespace: fw.Namespace,
				Labels: map[string]string{constants.LabelFirewallName: fw.Name}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{firewallv1alpha1.DeliveryKeySecretKey: der},
		}
		if err := r.credentials.Create(ctx, secret); err != nil {
			return err
		}
	default:
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(fw.DeepCopy())
	metav1.SetMetaDataAnnotation(&fw.ObjectMeta, firewallv1alpha1.AnnotationDeliveryKey, base64.StdEncoding.EncodeToString(pub))
	return r.Client.Patch(ctx, fw, patch)
}

// deliveryKeySecret reads the Firewall's delivery key Secret around the cache.
func (r *Reconciler) deliveryKeySecret(ctx context.Context, fw *firewallv1alpha1.Firewall) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	return secret, r.credentials.Get(ctx, client.ObjectKey{Namespace: fw.Namespace, Name: firewallv1alpha1.DeliveryKeySecretName(fw.Name)}, secret)
}

func parseDeliveryKey(secret *corev1.Secret) (*ecdsa.PrivateKey, error) {
	parsed, err := x509.ParsePKCS8PrivateKey(secret.Data[firewallv1alpha1.DeliveryKeySecretKey])
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %s: %w", secret.Namespace, secret.Name, firewallv1alpha1.DeliveryKeySecretKey, err)
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("secret %s/%s: %s: %T is no ECDSA key", secret.Namespace, secret.Name, firewallv1alpha1.DeliveryKeySecretKey, parsed)
	}
	return key, nil
}

// deliver hands the agent of a restored machine a boot credential of this
// seed through the shoot, sealed to the key its agent's certificates were
// pinned to and signed with the Firewall's delivery key. While the last
// delivery is good for half its life, it only puts that one back when the
// shoot's copy differs from the seed's record.
func (r *Reconciler) deliver(ctx context.Context, fw *firewallv1alpha1.Firewall) error {
	agentKey, err := base64.StdEncoding.DecodeString(fw.Annotations[firewallv1alpha1.AnnotationAgentKey])
	if err != nil || len(agentKey) == 0 {
		// Without the key only the shoot's admins could read what is delivered.
		return fmt.Errorf("cannot deliver a bootstrap kubeconfig through the shoot: Firewall %s/%s has no valid %s (its agent never held a certificate); roll the firewall", fw.Namespace, fw.Name, firewallv1alpha1.AnnotationAgentKey)
	}
	secret, err := r.deliveryKeySecret(ctx, fw)
	if err != nil {
		return fmt.Errorf("cannot deliver a bootstrap kubeconfig through the shoot: the delivery key of Firewall %s/%s (it travels in the Extension's state): %w; roll the firewall", fw.Namespace, fw.Name, err)
	}
	key, err := parseDeliveryKey(secret)
	if err != nil {
		return err
	}
	now := r.Clock.Now()
	if expires, err := time.Parse(time.RFC3339, string(secret.Data[deliveryExpiresKey])); err == nil && expires.Sub(now) > r.tokenValidity()/2 {
		current, err := r.Bootstrap.Delivery.Delivered(ctx, fw.Namespace, fw.Name)
		if err != nil {
			return fmt.Errorf("reading the delivered bootstrap kubeconfig: %w", err)
		}
		if bytes.Equal(current, secret.Data[deliveryBoxKey]) {
			return nil
		}
		log.FromContext(ctx).Info("The shoot's copy of the delivery differs from the seed's record; writing it again")
		return r.Bootstrap.Delivery.Deliver(ctx, fw.Namespace, fw.Name, secret.Data[deliveryBoxKey])
	}

	kubeconfig, expires, err := r.bootstrapKubeconfig(ctx, fw)
	if err != nil {
		return err
	}
	sealed, err := seal.Seal(agentKey, fw.Namespace, fw.Name, kubeconfig)
	if err != nil {
		return fmt.Errorf("sealing the bootstrap kubeconfig to the agent's key: %w", err)
	}
	generation := now.UnixNano()
	if last, err := strconv.ParseInt(string(secret.Data[firewallv1alpha1.DeliveryGenerationSecretKey]), 10, 64); err == nil && last >= generation {
		generation = last + 1
	}
	box, err := seal.Sign(key, seal.Delivery{Firewall: fw.Namespace + "/" + fw.Name, Generation: generation, Expires: expires, Sealed: sealed})
	if err != nil {
		return fmt.Errorf("signing the delivery: %w", err)
	}
	// The seed's record first: what the shoot holds is compared with it.
	secret.Data[deliveryBoxKey] = box
	secret.Data[deliveryExpiresKey] = []byte(expires.UTC().Format(time.RFC3339))
	secret.Data[firewallv1alpha1.DeliveryGenerationSecretKey] = []byte(strconv.FormatInt(generation, 10))
	if err := r.credentials.Update(ctx, secret); err != nil {
		return fmt.Errorf("recording the delivery: %w", err)
	}
	if err := r.Bootstrap.Delivery.Deliver(ctx, fw.Namespace, fw.Name, box); err != nil {
		return fmt.Errorf("delivering the bootstrap kubeconfig through the shoot: %w", err)
	}
	log.FromContext(ctx).Info("Delivered a sealed bootstrap kubeconfig through the shoot", "keyID", seal.KeyID(agentKey), "generation", generation, "expires", expires)
	return nil
}

// withdraw takes the delivery back from the shoot and forgets it in the
// seed: its token is revoked, and a later delivery must be a new one.
func (r *Reconciler) withdraw(ctx context.Context, fw *firewallv1alpha1.Firewall) error {
	if err := r.Bootstrap.Delivery.Withdraw(ctx, fw.Namespace, fw.Name); err != nil {
		return err
	}
	secret, err := r.deliveryKeySecret(ctx, fw)
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	if _, ok := secret.Data[deliveryBoxKey]; !ok {
		return nil
	}
	delete(secret.Data, deliveryBoxKey)
	delete(secret.Data, deliveryExpiresKey)
	return r.credentials.Update(ctx, secret)
}

// deleteDeliveryKey removes the key with its Firewall.
func (r *Reconciler) deleteDeliveryKey(ctx context.Context, fw *firewallv1alpha1.Firewall) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fw.Namespace, Name: firewallv1alpha1.DeliveryKeySecretName(fw.Name)}}
	return client.IgnoreNotFound(r.credentials.Delete(ctx, secret))
}
