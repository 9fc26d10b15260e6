package credentials

import (
	"context"
	"fmt"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	"github.com/gardener/gardener/extensions/pkg/util"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// ShootDelivery hands a firewall's bootstrap kubeconfig to its agent through
// the shoot. After a control plane migration the machine still holds a
// credential for the old seed only; the shoot's endpoint is the one address
// that did not change, and the agent still holds a valid shoot token.
//
// What it writes is sealed to the agent's pinned key (pkg/utils/seal): the
// shoot's admins read every Secret of the shoot, and must learn nothing from
// this one that authenticates at the seed. It is signed with the Firewall's
// delivery key, which the shoot never sees: they can write the Secret, but
// not a box the agent takes.
//
// It writes the Secret and a Role naming exactly that Secret directly with
// the shoot client, not through a ManagedResource: the content is a
// credential that lives minutes and is needed now, and it is withdrawn as
// soon as the agent holds its certificate.
type ShootDelivery struct {
	// SeedClient reads the shoot's `gardener` kubeconfig Secret of a shoot
	// namespace, from which the shoot client is built, as every Gardener
	// extension does.
	SeedClient client.Client

	// shootClientFor, when set, replaces the shoot client (tests).
	shootClientFor func(ctx context.Context, namespace string) (client.Client, error)
}

var shootScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

func (d *ShootDelivery) shootClient(ctx context.Context, namespace string) (client.Client, error) {
	if d.shootClientFor != nil {
		return d.shootClientFor(ctx, namespace)
	}
	_, c, err := util.NewClientForShoot(ctx, d.SeedClient, namespace, client.Options{Scheme: shootScheme}, extensionsconfigv1alpha1.RESTOptions{})
	if err != nil {
		return nil, fmt.Errorf("client for the shoot of %s: %w", namespace, err)
	}
	return c, nil
}

// Deliver writes the signed, sealed bootstrap kubeconfig of the firewall
// `name` of the seed namespace into the shoot, readable by the agent's
// ServiceAccount only.
func (d *ShootDelivery) Deliver(ctx context.Context, namespace, name string, box []byte) error {
	c, err := d.shootClient(ctx, namespace)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: constants.ShootNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("shoot namespace %s: %w", constants.ShootNamespace, err)
	}
	secretName := firewallv1alpha1.DeliveredBootstrapSecretName(name)
	labels := map[string]string{constants.LabelFirewallName: name}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: constants.ShootNamespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, secret, func() error {
		secret.Labels = labels
		secret.Type = corev1.SecretTypeOpaque
		secret.Data = map[string][]byte{firewallv1alpha1.DeliveredBootstrapKey: box}
		return nil
	}); err != nil {
		return fmt.Errorf("shoot secret %s/%s: %w", constants.ShootNamespace, secretName, err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: constants.ShootNamespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, role, func() error {
		role.Labels = labels
		role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{secretName}, Verbs: []string{"get"}}}
		return nil
	}); err != nil {
		return fmt.Errorf("shoot role %s/%s: %w", constants.ShootNamespace, secretName, err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: constants.ShootNamespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, binding, func() error {
		binding.Labels = labels
		binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: secretName}
		binding.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: constants.AgentServiceAccountName, Namespace: metav1.NamespaceSystem}}
		return nil
	}); err != nil {
		return fmt.Errorf("shoot role binding %s/%s: %w", constants.ShootNamespace, secretName, err)
	}
	return nil
}

// Delivered is what the shoot holds for the firewall now, nil when nothing:
// the seed compares it with its own record and never trusts it (the shoot's
// admins can write it).
func (d *ShootDelivery) Delivered(ctx context.Context, namespace, name string) ([]byte, error) {
	c, err := d.shootClient(ctx, namespace)
	if err != nil {
		return nil, err
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: constants.ShootNamespace, Name: firewallv1alpha1.DeliveredBootstrapSecretName(name)}, secret); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return secret.Data[firewallv1alpha1.DeliveredBootstrapKey], nil
}

// Withdraw removes what Deliver wrote; nothing there is no error.
func (d *ShootDelivery) Withdraw(ctx context.Context, namespace, name string) error {
	c, err := d.shootClient(ctx, namespace)
	if err != nil {
		return err
	}
	meta := metav1.ObjectMeta{Name: firewallv1alpha1.DeliveredBootstrapSecretName(name), Namespace: constants.ShootNamespace}
	for _, obj := range []client.Object{&corev1.Secret{ObjectMeta: meta}, &rbacv1.RoleBinding{ObjectMeta: meta}, &rbacv1.Role{ObjectMeta: meta}} {
		if err := c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("withdrawing %s/%s from the shoot: %w", constants.ShootNamespace, meta.Name, err)
		}
	}
	return nil
}
