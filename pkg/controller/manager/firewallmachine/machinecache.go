package firewallmachine

import (
	"context"
	"time"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
)

// DefaultMachineResync is the default of Reconciler.MachineResync.
const DefaultMachineResync = 5 * time.Minute

// seenMachine is the provider's last answer for a Firewall.
type seenMachine struct {
	m          machine.Machine
	at         time.Time
	generation int64
}

// findMachine asks the provider for the Firewall's machine, unless its last
// answer still holds: every agent heartbeat reconciles the Firewall (every
// 10 s), and a machine that has booted changes only through events of its
// own, which the resync sees. A machine still booting or crash-looping, a
// changed spec and a restart of the manager read it again.
func (r *Reconciler) findMachine(ctx context.Context, fw *firewallv1alpha1.Firewall) (*machine.Machine, error) {
	if v, ok := r.seen.Load(fw.UID); ok {
		s := v.(seenMachine)
		if s.generation == fw.Generation && r.Clock.Since(s.at) < r.machineResync() {
			m := s.m
			return &m, nil
		}
	}
	m, err := r.Provider.Find(ctx, fw)
	r.remember(fw, m)
	return m, err
}

// remember keeps a booted, healthy machine as the provider described it now.
func (r *Reconciler) remember(fw *firewallv1alpha1.Firewall, m *machine.Machine) {
	if m == nil || !m.Provisioned || m.CrashLoop {
		r.seen.Delete(fw.UID)
		return
	}
	r.seen.Store(fw.UID, seenMachine{m: *m, at: r.Clock.Now(), generation: fw.Generation})
}

func (r *Reconciler) machineResync() time.Duration {
	if r.MachineResync > 0 {
		return r.MachineResync
	}
	return DefaultMachineResync
}
