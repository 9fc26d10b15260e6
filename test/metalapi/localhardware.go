package metalapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	ignition "github.com/coreos/ignition/v2/config/v3_5/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/local"
	metalprovider "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/metal"
)

// LocalHardware boots an allocated firewall as a machine of the local
// provider: a network namespace running the real agent with the files of
// the allocation's Ignition userdata. Its interfaces are named after the
// allocation's networks as on metal-stack (vrf<vrf> of the private and of
// the first external network).
type LocalHardware struct {
	Provider *local.Provider

	mu  sync.Mutex
	ids map[string]string
}

// Boot creates the local machine.
func (h *LocalHardware) Boot(ctx context.Context, b BootSpec) error {
	files, err := IgnitionFiles(b.UserData)
	if err != nil {
		return err
	}
	fw := &firewallv1alpha1.Firewall{ObjectMeta: metav1.ObjectMeta{Name: b.Hostname}, Spec: firewallv1alpha1.FirewallSpec{Project: b.Project}}
	for _, t := range b.Tags {
		if k, v, ok := strings.Cut(t, "="); ok && k == machine.TagNamespace {
			fw.Namespace = v
		}
	}
	links := local.DefaultLinks
	external := ""
	for _, n := range b.Networks {
		switch {
		case ptr.Deref(n.Underlay, false):
		case ptr.Deref(n.Private, false):
			links.Internal = metalprovider.InterfaceOf(ptr.Deref(n.Vrf, 0))
		case external == "":
			external = metalprovider.InterfaceOf(ptr.Deref(n.Vrf, 0))
			links.External = external
		}
	}
	m, err := h.Provider.CreateWithLinks(ctx, fw, files, links)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ids == nil {
		h.ids = map[string]string{}
	}
	h.ids[b.MachineID] = m.ID
	return nil
}

// Halt deletes the local machine.
func (h *LocalHardware) Halt(machineID string) error {
	h.mu.Lock()
	id, ok := h.ids[machineID]
	delete(h.ids, machineID)
	h.mu.Unlock()
	if !ok {
		return nil
	}
	return h.Provider.Delete(context.Background(), id)
}

// LocalID is the local provider's ID of a booted metal machine.
func (h *LocalHardware) LocalID(machineID string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ids[machineID]
}

// IgnitionFiles are the files an Ignition config writes, as a machine's
// first boot does: data URLs (base64) only, which is what the extension
// writes.
func IgnitionFiles(data []byte) ([]machine.File, error) {
	cfg := ignition.Config{}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("userdata is no Ignition config: %w", err)
	}
	var files []machine.File
	for _, f := range cfg.Storage.Files {
		src := ptr.Deref(f.Contents.Source, "")
		_, b64, ok := strings.Cut(src, ";base64,")
		if !ok || !strings.HasPrefix(src, "data:") {
			return nil, fmt.Errorf("userdata file %s: only base64 data URLs are supported", f.Path)
		}
		content, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("userdata file %s: %w", f.Path, err)
		}
		files = append(files, machine.File{Path: f.Path, Content: content, Mode: os.FileMode(ptr.Deref(f.Mode, 0o600))})
	}
	return files, nil
}
