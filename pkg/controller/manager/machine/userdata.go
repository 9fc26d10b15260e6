package machine

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// DefaultFileMode is the mode of a userdata file without one: userdata
// carries credentials, so nobody but root reads it by default.
const DefaultFileMode os.FileMode = 0o600

// ResolveUserdata turns the Firewall's userdataContents into files, reading
// secret-backed contents now, at provisioning time, so they are never copied
// into the Firewall object.
func ResolveUserdata(ctx context.Context, c client.Reader, fw *firewallv1alpha1.Firewall) ([]File, error) {
	files := make([]File, 0, len(fw.Spec.UserdataContents))
	for i, uc := range fw.Spec.UserdataContents {
		f := File{Path: uc.Path, Content: []byte(uc.Content), Mode: DefaultFileMode}
		if m := uc.Mode; m != nil && *m >= 0 && *m <= 0o777 {
			f.Mode = os.FileMode(*m)
		}
		if ref := uc.SecretRef; ref != nil {
			secret := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: fw.Namespace, Name: ref.Name}, secret); err != nil {
				return nil, fmt.Errorf("spec.userdataContents[%d].secretRef: reading secret %q: %w", i, ref.Name, err)
			}
			content, ok := secret.Data[ref.Key]
			if !ok {
				return nil, fmt.Errorf("spec.userdataContents[%d].secretRef: secret %q has no key %q", i, ref.Name, ref.Key)
			}
			f.Content = content
		}
		files = append(files, f)
	}
	return files, nil
}
