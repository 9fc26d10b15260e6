// Package manager wires the firewall manager's controllers: FirewallDeployment
// -> FirewallSet -> Firewall, the same shape as metal-stack's
// firewall-controller-manager, run inside the extension in every shoot namespace.
package manager

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewalldeployment"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallmachine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/rollrequest"
)

// Options configure the firewall manager.
type Options struct {
	// Provider hands out the machines.
	Provider machine.Provider
	// ProgressDeadline is how long a new FirewallSet may take to become Ready
	// before the rollout is reported as failed. Default 15m.
	ProgressDeadline time.Duration
	// CreateTimeout is how long a Firewall whose agent never reported may
	// take to become Ready before it is replaced. Default 20m: bare metal
	// takes minutes to boot. A FirewallDeployment's spec overrides it.
	CreateTimeout time.Duration
	// HealthTimeout is how long a Firewall whose agent has reported may stay
	// not Ready before it is replaced. Default 20m. A FirewallDeployment's
	// spec overrides it.
	HealthTimeout time.Duration
	// DistanceTimeout is how long a rolling update waits, at each step, for
	// firewalls to announce the distance it set. Default 2m. A
	// FirewallDeployment's spec overrides it.
	DistanceTimeout time.Duration
	// MaxReplacements is how many Firewalls a set creates in place of failed
	// ones before it gives up and reports; 0 (the zero value) replaces none.
	MaxReplacements int32
	// ReplacementBackoff is the pause after a failure before the second
	// replacement, doubled for each further one. Default 1m.
	ReplacementBackoff time.Duration
	// HeartbeatTimeout is how old the agent's last report may be for a
	// Firewall to count as connected. Default 3m.
	HeartbeatTimeout time.Duration
	// Bootstrap, when set, gives each Firewall's agent its seed identity.
	Bootstrap *firewallmachine.Bootstrap
	// InDoubtSettle is how long only Find is asked after a Create whose
	// outcome is unknown. Default firewallmachine.DefaultInDoubtSettle.
	InDoubtSettle time.Duration
	// ShootClient, when set, reaches a shoot namespace's shoot, where its
	// owner asks for a roll (rollrequest); nil turns that off.
	ShootClient func(ctx context.Context, namespace string) (client.Client, error)
	// RollRequestInterval is how often each shoot is asked for roll
	// requests. Default DefaultRollRequestInterval.
	RollRequestInterval time.Duration
	// Workers is how many objects each controller reconciles at once: a
	// firewall's first reconcile waits on the provider and the seed's API
	// (tokens, RBAC, access reviews). Default DefaultWorkers.
	Workers int
}

// Defaults for Options.
const (
	DefaultProgressDeadline = 15 * time.Minute
	DefaultCreateTimeout    = 20 * time.Minute
	DefaultHealthTimeout    = 20 * time.Minute
	DefaultDistanceTimeout  = 2 * time.Minute
	DefaultMaxReplacements  = 3
	DefaultHeartbeatTimeout = 3 * time.Minute
	DefaultWorkers          = 10
	// DefaultRollRequestInterval: a shoot owner's roll starts within a minute.
	DefaultRollRequestInterval = time.Minute
)

// AddToManager adds the three controllers to mgr.
func AddToManager(mgr manager.Manager, opts Options) error {
	if opts.ProgressDeadline == 0 {
		opts.ProgressDeadline = DefaultProgressDeadline
	}
	if opts.HealthTimeout == 0 {
		opts.HealthTimeout = DefaultHealthTimeout
	}
	if opts.CreateTimeout == 0 {
		opts.CreateTimeout = DefaultCreateTimeout
	}
	if opts.HeartbeatTimeout == 0 {
		opts.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if opts.Workers == 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.DistanceTimeout == 0 {
		opts.DistanceTimeout = DefaultDistanceTimeout
	}
	if err := (&firewalldeployment.Reconciler{ProgressDeadline: opts.ProgressDeadline, DistanceTimeout: opts.DistanceTimeout, Workers: opts.Workers}).AddToManager(mgr); err != nil {
		return err
	}
	if err := (&firewallset.Reconciler{
		CreateTimeout: opts.CreateTimeout, HealthTimeout: opts.HealthTimeout,
		MaxReplacements: opts.MaxReplacements, ReplacementBackoff: opts.ReplacementBackoff, Workers: opts.Workers,
	}).AddToManager(mgr); err != nil {
		return err
	}
	if opts.ShootClient != nil {
		if opts.RollRequestInterval == 0 {
			opts.RollRequestInterval = DefaultRollRequestInterval
		}
		if err := (&rollrequest.Reconciler{ShootClient: opts.ShootClient, Interval: opts.RollRequestInterval, Workers: opts.Workers}).AddToManager(mgr); err != nil {
			return err
		}
	}
	return (&firewallmachine.Reconciler{Provider: opts.Provider, HealthTimeout: opts.CreateTimeout, HeartbeatTimeout: opts.HeartbeatTimeout,
		Bootstrap: opts.Bootstrap, InDoubtSettle: opts.InDoubtSettle, Workers: opts.Workers}).AddToManager(mgr)
}
