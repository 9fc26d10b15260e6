// Package manager wires the firewall manager's controllers: FirewallDeployment
// -> FirewallSet -> Firewall, the same shape as metal-stack's
// firewall-controller-manager, run inside the extension in every shoot namespace.
package manager

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewalldeployment"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallmachine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
)

// Options configure the firewall manager.
type Options struct {
	// Provider hands out the machines.
	Provider machine.Provider
	// ProgressDeadline is how long a new FirewallSet may take to become Ready
	// before the rollout is reported as failed. Default 15m.
	ProgressDeadline time.Duration
	// HealthTimeout is how long a Firewall may take to become Ready before it
	// counts as unhealthy. Default 20m: bare metal takes minutes to boot.
	HealthTimeout time.Duration
	// HeartbeatTimeout is how old the agent's last report may be for a
	// Firewall to count as connected. Default 3m.
	HeartbeatTimeout time.Duration
	// Bootstrap, when set, gives each Firewall's agent its seed identity.
	Bootstrap *firewallmachine.Bootstrap
	// InDoubtSettle is how long only Find is asked after a Create whose
	// outcome is unknown. Default firewallmachine.DefaultInDoubtSettle.
	InDoubtSettle time.Duration
	// Workers is how many objects each controller reconciles at once: a
	// firewall's first reconcile waits on the provider and the seed's API
	// (tokens, RBAC, access reviews). Default DefaultWorkers.
	Workers int
}

// Defaults for Options.
const (
	DefaultProgressDeadline = 15 * time.Minute
	DefaultHealthTimeout    = 20 * time.Minute
	DefaultHeartbeatTimeout = 3 * time.Minute
	DefaultWorkers          = 10
)

// AddToManager adds the three controllers to mgr.
func AddToManager(mgr manager.Manager, opts Options) error {
	if opts.ProgressDeadline == 0 {
		opts.ProgressDeadline = DefaultProgressDeadline
	}
	if opts.HealthTimeout == 0 {
		opts.HealthTimeout = DefaultHealthTimeout
	}
	if opts.HeartbeatTimeout == 0 {
		opts.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if opts.Workers == 0 {
		opts.Workers = DefaultWorkers
	}
	if err := (&firewalldeployment.Reconciler{ProgressDeadline: opts.ProgressDeadline, Workers: opts.Workers}).AddToManager(mgr); err != nil {
		return err
	}
	if err := (&firewallset.Reconciler{HealthTimeout: opts.HealthTimeout, Workers: opts.Workers}).AddToManager(mgr); err != nil {
		return err
	}
	return (&firewallmachine.Reconciler{Provider: opts.Provider, HealthTimeout: opts.HealthTimeout, HeartbeatTimeout: opts.HeartbeatTimeout,
		Bootstrap: opts.Bootstrap, InDoubtSettle: opts.InDoubtSettle, Workers: opts.Workers}).AddToManager(mgr)
}
