package machine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	ignition "github.com/coreos/ignition/v2/config/v3_5/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
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

// Ignition renders files into the Ignition config a real machine boots
// with, and enables the agent's boot unit.
func Ignition(files []File) ([]byte, error) {
	cfg := ignition.Config{Ignition: ignition.Ignition{Version: "3.5.0"}}
	cfg.Systemd.Units = []ignition.Unit{{Name: BootUnitName, Enabled: ptr.To(true), Contents: ptr.To(bootUnit)}}
	for _, f := range files {
		cfg.Storage.Files = append(cfg.Storage.Files, ignition.File{
			Node: ignition.Node{Path: f.Path, Overwrite: ptr.To(true)},
			FileEmbedded1: ignition.FileEmbedded1{
				Contents: ignition.Resource{Source: ptr.To("data:;base64," + base64.StdEncoding.EncodeToString(f.Content))},
				Mode:     ptr.To(int(f.Mode.Perm())),
			},
		})
	}
	return json.Marshal(cfg)
}
