package credentials

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstraptokenapi "k8s.io/cluster-bootstrap/token/api"
	bootstraptokenutil "k8s.io/cluster-bootstrap/token/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// MaxBootstrapTokenValidity bounds a bootstrap token's life: it only has to
// last until the agent holds its first certificate.
const MaxBootstrapTokenValidity = time.Hour

// BootstrapToken is a token and when it expires.
type BootstrapToken struct {
	// Token is "<id>.<secret>"; it is a credential and must never be logged.
	Token      string
	Expiration time.Time
}

// EnsureBootstrapToken returns a bootstrap token for the firewall that is
// valid for at least half of validity, creating one when the newest has less
// left. Older tokens stay until they expire (an agent may be using one right
// now); expired ones are deleted.
func EnsureBootstrapToken(ctx context.Context, c client.Client, namespace, name string, validity time.Duration, now time.Time) (*BootstrapToken, error) {
	if validity <= 0 || validity > MaxBootstrapTokenValidity {
		return nil, fmt.Errorf("bootstrap token validity %s must be within (0, %s]", validity, MaxBootstrapTokenValidity)
	}
	secrets, err := bootstrapTokenSecrets(ctx, c, namespace, name)
	if err != nil {
		return nil, err
	}
	var newest *BootstrapToken
	for _, s := range secrets {
		exp, err := time.Parse(time.RFC3339, string(s.Data[bootstraptokenapi.BootstrapTokenExpirationKey]))
		if err != nil || !exp.After(now) {
			if err := c.Delete(ctx, &s); client.IgnoreNotFound(err) != nil {
				return nil, err
			}
			continue
		}
		if newest == nil || exp.After(newest.Expiration) {
			newest = &BootstrapToken{
				Token:      string(s.Data[bootstraptokenapi.BootstrapTokenIDKey]) + "." + string(s.Data[bootstraptokenapi.BootstrapTokenSecretKey]),
				Expiration: exp,
			}
		}
	}
	if newest != nil && newest.Expiration.Sub(now) >= validity/2 {
		return newest, nil
	}
	return createBootstrapToken(ctx, c, namespace, name, now.Add(validity))
}

func createBootstrapToken(ctx context.Context, c client.Client, namespace, name string, expiration time.Time) (*BootstrapToken, error) {
	token, err := bootstraptokenutil.GenerateBootstrapToken()
	if err != nil {
		return nil, err
	}
	id, secret := token[:6], token[7:]
	expiration = expiration.UTC().Truncate(time.Second)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      bootstraptokenutil.BootstrapTokenSecretName(id),
			Namespace: metav1.NamespaceSystem,
			Labels:    map[string]string{constants.LabelFirewallNamespace: namespace, constants.LabelFirewallName: name},
		},
		Type: bootstraptokenapi.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			bootstraptokenapi.BootstrapTokenDescriptionKey:      []byte("bootstrap token of firewall " + namespace + "/" + name),
			bootstraptokenapi.BootstrapTokenIDKey:               []byte(id),
			bootstraptokenapi.BootstrapTokenSecretKey:           []byte(secret),
			bootstraptokenapi.BootstrapTokenExpirationKey:       []byte(expiration.Format(time.RFC3339)),
			bootstraptokenapi.BootstrapTokenUsageAuthentication: []byte("true"),
			bootstraptokenapi.BootstrapTokenExtraGroupsKey:      []byte(firewallv1alpha1.BootstrapGroup(namespace, name)),
		},
	}
	if err := c.Create(ctx, s); err != nil {
		return nil, fmt.Errorf("creating bootstrap token for firewall %s/%s: %w", namespace, name, err)
	}
	return &BootstrapToken{Token: token, Expiration: expiration}, nil
}

// DeleteBootstrapTokens removes the firewall's bootstrap tokens; with an
// empty name, those of every firewall of the namespace.
func DeleteBootstrapTokens(ctx context.Context, c client.Client, namespace, name string) error {
	secrets, err := bootstrapTokenSecrets(ctx, c, namespace, name)
	if err != nil {
		return err
	}
	for _, s := range secrets {
		if err := c.Delete(ctx, &s); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

func bootstrapTokenSecrets(ctx context.Context, c client.Client, namespace, name string) ([]corev1.Secret, error) {
	selector := client.MatchingLabels{constants.LabelFirewallNamespace: namespace}
	if name != "" {
		selector[constants.LabelFirewallName] = name
	}
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.InNamespace(metav1.NamespaceSystem), selector); err != nil {
		return nil, err
	}
	var out []corev1.Secret
	for _, s := range list.Items {
		if s.Type == bootstraptokenapi.SecretTypeBootstrapToken {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
