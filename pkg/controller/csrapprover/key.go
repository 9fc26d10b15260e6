package csrapprover

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seal"
)

// checkKey binds a firewall's certificates to one key for the firewall's
// life. The first approved CSR pins its public key on the Firewall (an
// annotation, which the agent cannot write); every later CSR, renewals and
// bootstraps after a migration alike, must carry that key. A stolen
// certificate without its key therefore cannot renew itself, a stolen boot
// token yields nothing for a firewall whose agent already connected, and the
// key is what a credential delivered through the shoot is sealed to. An
// operator revokes a key with AnnotationRevokedAgentKey (then rolls the
// firewall).
func (r *Reconciler) checkKey(ctx context.Context, fr *firewallRequest, fw *firewallv1alpha1.Firewall) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(fr.request.PublicKey)
	if err != nil {
		return "the request's public key cannot be encoded: " + err.Error(), nil
	}
	id := seal.KeyID(der)
	if fw.Annotations[firewallv1alpha1.AnnotationRevokedAgentKey] == id {
		return fmt.Sprintf("key %s of Firewall %s/%s is revoked (%s)", id, fr.namespace, fr.name, firewallv1alpha1.AnnotationRevokedAgentKey), nil
	}
	if pinned, ok := fw.Annotations[firewallv1alpha1.AnnotationAgentKey]; ok {
		want, err := base64.StdEncoding.DecodeString(pinned)
		if err != nil || !bytes.Equal(want, der) {
			return fmt.Sprintf("the request's key %s is not the key %s pinned on Firewall %s/%s", id, seal.KeyID(want), fr.namespace, fr.name), nil
		}
		return "", nil
	}
	// No pin yet: the firewall's first certificate (check has verified the
	// requester is its boot identity or its own certificate). Pinned before the approval: a failure here leaves the CSR undecided
	// and retried, never approved without a pin.
	patch := client.MergeFrom(fw.DeepCopy())
	if fw.Annotations == nil {
		fw.Annotations = map[string]string{}
	}
	fw.Annotations[firewallv1alpha1.AnnotationAgentKey] = base64.StdEncoding.EncodeToString(der)
	if err := r.Client.Patch(ctx, fw, patch); err != nil {
		return "", fmt.Errorf("pinning the agent key on Firewall %s/%s: %w", fr.namespace, fr.name, err)
	}
	return "", nil
}
