package metalapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"sync"

	ignitionv24 "github.com/flatcar/ignition/config/v2_4"
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

// IgnitionFiles are the files an Ignition config writes from data URLs (the
// extension's own files), parsed as metal-stack's installer parses the
// userdata: with flatcar/ignition's config/v2_4 (os-installer
// pkg/installer/os/common/process_userdata.go). Any entry of its report, a
// warning included, is an error: the installer would log it and go on with
// a machine that misses files. Files the config downloads (an agent release)
// are left out: the local machine runs its own agent binary.
func IgnitionFiles(data []byte) ([]machine.File, error) {
	cfg, report, err := ignitionv24.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("userdata is no Ignition config metal-stack's installer takes: %w (%s)", err, strings.TrimSpace(report.String()))
	}
	if len(report.Entries) > 0 {
		return nil, fmt.Errorf("the Ignition parser of metal-stack's installer reports on the userdata: %s", strings.TrimSpace(report.String()))
	}
	var files []machine.File
	for _, f := range cfg.Storage.Files {
		src := f.Contents.Source
		if !strings.HasPrefix(src, "data:") {
			continue
		}
		_, b64, ok := strings.Cut(src, ";base64,")
		if !ok {
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
