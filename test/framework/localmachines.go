package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/local"
)

// LocalMachines is the local machine provider between two network namespaces
// of its own, <prefix>-int-<id> and <prefix>-ext-<id>: the id is random, so
// that runs side by side or left over from a killed run never meet.
type LocalMachines struct {
	ID            string
	InternalNetNS string
	ExternalNetNS string
	Provider      *local.Provider

	stateDir string
}

// NewLocalMachines names the namespaces and sets up the provider with opts
// (its StateDir, AgentPath and NetNSPrefix). Call DeleteNetNS when done.
func NewLocalMachines(prefix string, opts local.Options) (*LocalMachines, error) {
	suffix := make([]byte, 3)
	if _, err := rand.Read(suffix); err != nil {
		return nil, err
	}
	m := &LocalMachines{ID: hex.EncodeToString(suffix), stateDir: opts.StateDir}
	m.InternalNetNS, m.ExternalNetNS = prefix+"-int-"+m.ID, prefix+"-ext-"+m.ID
	opts.InternalNetNS, opts.ExternalNetNS = m.InternalNetNS, m.ExternalNetNS
	p, err := local.New(opts)
	if err != nil {
		return nil, err
	}
	m.Provider = p
	return m, nil
}

// DeleteNetNS removes every machine the provider still has (its agent
// stopped, its namespace deleted: a spec that failed, or an extension
// stopped before its Firewalls were gone, leaves them), then the two
// namespaces and with them the links into the machines.
func (m *LocalMachines) DeleteNetNS() {
	entries, _ := os.ReadDir(m.stateDir)
	for _, e := range entries {
		if e.IsDir() {
			_ = m.Provider.Delete(context.Background(), e.Name())
		}
	}
	for _, ns := range []string{m.InternalNetNS, m.ExternalNetNS} {
		_ = exec.Command("ip", "netns", "delete", ns).Run()
	}
}
