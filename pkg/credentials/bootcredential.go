package credentials

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// Bounds of a boot token's life: the TokenRequest API's minimum, and an hour,
// enough for a machine to boot and its agent to send its CSR.
const (
	MinBootTokenValidity = 10 * time.Minute
	MaxBootTokenValidity = time.Hour
)

// bootServiceAccountPrefix starts the boot ServiceAccounts' names.
const bootServiceAccountPrefix = "firewall-boot."

// BootServiceAccountName is the ServiceAccount whose token the firewall
// namespace/name boots with. It lives in the extension's namespace, so that
// the extension mints tokens only there.
func BootServiceAccountName(namespace, name string) string {
	n := bootServiceAccountPrefix + namespace + "." + name
	if len(n) <= 253 {
		return n
	}
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	return bootServiceAccountPrefix + hex.EncodeToString(sum[:20])
}

// BootUser is the user name the boot token of namespace/name authenticates as.
func BootUser(bootNamespace, namespace, name string) string {
	return serviceaccount.MakeUsername(bootNamespace, BootServiceAccountName(namespace, name))
}

// BootGroups are the groups the boot token carries besides system:authenticated.
func BootGroups(bootNamespace string) []string {
	return serviceaccount.MakeGroupNames(bootNamespace)
}

// BootCredential is a token and when it expires. The token must never be logged.
type BootCredential struct {
	Token      string
	Expiration time.Time
}

// EnsureBootCredential mints a token for the firewall's boot ServiceAccount
// (creating the ServiceAccount if needed), valid for validity.
func EnsureBootCredential(ctx context.Context, c client.Client, bootNamespace, namespace, name string, validity time.Duration) (*BootCredential, error) {
	if validity < MinBootTokenValidity || validity > MaxBootTokenValidity {
		return nil, fmt.Errorf("boot token validity %s must be within [%s, %s]", validity, MinBootTokenValidity, MaxBootTokenValidity)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name:      BootServiceAccountName(namespace, name),
		Namespace: bootNamespace,
		Labels:    map[string]string{constants.LabelFirewallNamespace: namespace, constants.LabelFirewallName: name},
	}, AutomountServiceAccountToken: ptr.To(false)}
	if err := c.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("boot ServiceAccount %s/%s: %w", bootNamespace, sa.Name, err)
	}
	// No audiences: the kube-apiserver's own. Bound to the ServiceAccount only:
	// deleting it revokes every token at once.
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(validity / time.Second))}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return nil, fmt.Errorf("token for boot ServiceAccount %s/%s: %w", bootNamespace, sa.Name, err)
	}
	return &BootCredential{Token: tr.Status.Token, Expiration: tr.Status.ExpirationTimestamp.Time}, nil
}

// DeleteBootCredentials deletes the boot ServiceAccount of the firewall
// namespace/name, or of every firewall of namespace when name is empty: every
// token minted for it stops authenticating at once.
func DeleteBootCredentials(ctx context.Context, c client.Client, bootNamespace, namespace, name string) error {
	selector := client.MatchingLabels{constants.LabelFirewallNamespace: namespace}
	if name != "" {
		selector[constants.LabelFirewallName] = name
	}
	list := &corev1.ServiceAccountList{}
	if err := c.List(ctx, list, client.InNamespace(bootNamespace), selector); err != nil {
		return err
	}
	for i := range list.Items {
		if err := c.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
