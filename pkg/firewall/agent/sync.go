package agent

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/seedsource"
)

// round is one pass over the API sources: each source's read, and whether
// what they hold changed.
type round struct {
	seed     seedFirewall
	metal    metalAllocation
	policies shootPolicies
	services shootServices
	// changed tells whether a source delivered something new.
	changed bool
	// shootErr is why the shoot could not be read: it was not configured at
	// start, or its policies or Services failed.
	shootErr error
	// before is what the sources held before the round, restored when the
	// apply fails so that the next round tries again.
	before sourceState
}

// sourceState is what the API sources delivered so far.
type sourceState struct {
	in                         Inputs
	policiesRead, servicesRead bool
}

// syncSources reads the Firewall from the seed, the allocation from the
// metal-api and the policies and Services from the shoot, applies once when
// any of them changed, and reports back:
// the heartbeat to the seed, each policy's state and the FirewallMonitor to
// the shoot. Losing a source keeps the ruleset in force; a failed apply is
// retried next time. It tells whether the round applied a ruleset.
func (a *Agent) syncSources(ctx context.Context, src *seedsource.Source, cfg *agentconfigv1alpha1.Config) bool {
	r := a.readSources(ctx, src, cfg)
	applied, applyErr := a.applySources(cfg, r)
	distanceErr := a.announceDistance(ctx, cfg, r.seed.fw)
	if c := cfg.Controllers.Firewall; c != nil && c.Source == agentconfigv1alpha1.SourceSeed {
		a.offerUpdate(ctx, cfg, r.seed.fw)
	}
	a.reportSources(ctx, cfg, r, applyErr, distanceErr)
	// After the heartbeat, which tells that the agent is switching.
	a.switchUpdate()
	return applied
}

// readSources reads every source the config uses into the agent's inputs.
func (a *Agent) readSources(ctx context.Context, src *seedsource.Source, cfg *agentconfigv1alpha1.Config) *round {
	r := &round{seed: seedFirewall{src: src}, before: sourceState{a.in, a.policiesRead, a.servicesRead}}
	r.changed = r.seed.read(ctx, a, cfg)
	if r.metal.read(ctx, a) {
		r.changed = true
	}
	switch {
	case usesShoot(cfg) && a.shoot == nil:
		// sources are set up once, at start.
		r.shootErr = errors.New("the config reads the shoot, which was not configured when the agent started: restart the agent")
		a.Log.Error("not reading the shoot; the ruleset in force stays", "error", r.shootErr)
	case policiesFromShoot(cfg):
		if r.policies.read(ctx, a) {
			r.changed = true
		}
		r.shootErr = r.policies.err
	}
	if servicesFromShoot(cfg) && a.shoot != nil {
		if r.services.read(ctx, a) {
			r.changed = true
		}
		if r.shootErr == nil {
			r.shootErr = r.services.err
		}
	}
	if usesShoot(cfg) {
		a.Metrics.ObserveSource(metrics.SourceShoot, r.shootErr)
	}
	return r
}

// applySources applies once when a source delivered something new and every
// source the config uses has answered; until then the ruleset in force
// stays. A failed apply forgets what the round read. It tells whether it
// applied.
func (a *Agent) applySources(cfg *agentconfigv1alpha1.Config, r *round) (bool, error) {
	if !r.changed || !a.ready(cfg) {
		return false, nil
	}
	err := a.applyLogged(cfg, "sources changed")
	if err != nil {
		a.in, a.policiesRead, a.servicesRead = r.before.in, r.before.policiesRead, r.before.servicesRead
		if a.metal != nil {
			// The metal-api tells changes only once: ask for all next time.
			a.metal.Forget()
		}
	}
	return err == nil, err
}

// reportSources tells the sources how the round went: the heartbeat to the
// seed, the policies' states (only once they are in force) and the
// FirewallMonitor to the shoot.
func (a *Agent) reportSources(ctx context.Context, cfg *agentconfigv1alpha1.Config, r *round, applyErr, distanceErr error) {
	message := ""
	if err := errors.Join(applyErr, distanceErr); err != nil {
		message = err.Error()
	}
	// What the sources hold is in force: applied, and every source answered.
	inForce := applyErr == nil && a.ready(cfg)
	if usesShoot(cfg) && r.shootErr == nil && inForce {
		a.lastShootRun = &metav1.Time{Time: time.Now()}
	}
	if inForce && r.seed.fw != nil {
		// The Firewall read this round is what the ruleset in force was built from.
		a.appliedGeneration = r.seed.fw.Generation
	}
	supported, distance := a.distanceStatus()
	hb := seedsource.Heartbeat{Message: message, LastShootRun: a.lastShootRun,
		AppliedGeneration: a.appliedGeneration, SelfUpdate: a.updateStatus(), DistanceSupported: supported, Distance: distance,
		MetricsAddress: a.internalMetrics.reported()}
	r.seed.report(ctx, a.Log, hb)
	if inForce {
		r.policies.report(ctx, a.Log, a.fqdnStatus)
	}
	if c := cfg.Controllers.Monitor; c != nil && c.Source == agentconfigv1alpha1.SourceShoot && a.shoot != nil {
		a.writeMonitor(ctx, cfg, r.seed.src != nil, r.seed.fw, r.shootErr, message)
	}
}
