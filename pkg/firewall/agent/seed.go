package agent

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/seedsource"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/shootsource"
)

// seedFirewall is the seed in one round: it gives the Firewall, whose traffic
// spec the agent enforces, and takes the heartbeat.
type seedFirewall struct {
	// src is the seed source; nil when no controller reads the seed.
	src *seedsource.Source
	// fw is the Firewall read in this round; nil when it could not be read.
	fw *fwv1alpha1.Firewall
}

// DefaultDeliveryAfter is how long a seed that does not answer is waited
// for before the agent looks for a delivered bootstrap kubeconfig.
const DefaultDeliveryAfter = 2 * time.Minute

// read reads the Firewall into the agent's inputs and tells whether its
// traffic spec changed. When the seed refuses the agent, or has not
// answered for DeliveryAfter, a bootstrap kubeconfig delivered through the
// shoot may let the agent in again.
func (s *seedFirewall) read(ctx context.Context, a *Agent, cfg *agentconfigv1alpha1.Config) bool {
	if s.src == nil {
		return false
	}
	fw, err := s.src.Firewall(ctx)
	if err != nil && a.lookForDelivery(err) && s.takeDeliveredBootstrap(ctx, a) {
		fw, err = s.src.Firewall(ctx)
	}
	if err == nil {
		a.seedFailingSince = time.Time{}
	} else if a.seedFailingSince.IsZero() {
		a.seedFailingSince = time.Now()
	}
	a.Metrics.ObserveSource(metrics.SourceSeed, err)
	if err != nil {
		a.Log.Error("reading the Firewall from the seed; the ruleset in force stays", "error", err)
		return false
	}
	s.fw = fw
	s.refreshShootKubeconfig(ctx, a.shoot, a.Log, cfg)
	if spec := fw.Spec.FirewallTrafficSpec; a.in.Seed == nil || !equality.Semantic.DeepEqual(*a.in.Seed, spec) {
		a.in.Seed = &spec
		return true
	}
	return false
}

// report writes the heartbeat, if the Firewall was read.
func (s *seedFirewall) report(ctx context.Context, log *slog.Logger, hb seedsource.Heartbeat) {
	if s.fw == nil {
		return
	}
	if err := s.src.Heartbeat(ctx, s.fw, hb); err != nil {
		log.Error("writing the heartbeat", "error", err)
	}
}

// refreshShootKubeconfig keeps the shoot kubeconfig on disk as fresh as the
// TokenRequestor keeps it in the seed: when the seed goes away (migration),
// the shoot must still be reachable with a valid token.
func (s *seedFirewall) refreshShootKubeconfig(ctx context.Context, shoot *shootsource.Source, log *slog.Logger, cfg *agentconfigv1alpha1.Config) {
	if shoot == nil || cfg.Sources.Shoot.AccessSecret == "" {
		return
	}
	secret, err := s.src.Secret(ctx, cfg.Sources.Shoot.AccessSecret)
	if err != nil {
		log.Error("reading the shoot access secret from the seed", "secret", cfg.Sources.Shoot.AccessSecret, "error", err)
		return
	}
	if err := shoot.Store(secret.Data[shootsource.AccessSecretKubeconfigKey]); err != nil {
		log.Error("storing the shoot kubeconfig", "error", err)
	}
}

// lookForDelivery tells whether the seed's failure err is one after which
// the agent looks for a delivered bootstrap kubeconfig: only then is the
// shoot, whose admins can write what it holds, asked at all.
func (a *Agent) lookForDelivery(err error) bool {
	if seedsource.Refused(err) {
		return true
	}
	after := a.DeliveryAfter
	if after == 0 {
		after = DefaultDeliveryAfter
	}
	return !a.seedFailingSince.IsZero() && time.Since(a.seedFailingSince) >= after
}

// takeDeliveredBootstrap looks for a bootstrap kubeconfig delivered through
// the shoot (after a control plane migration) and takes it if the seed
// signed it for this agent; it reports whether it did. A refused one is
// logged and counted, and changes nothing.
func (s *seedFirewall) takeDeliveredBootstrap(ctx context.Context, a *Agent) bool {
	if a.shoot == nil {
		return false
	}
	delivered, err := a.shoot.DeliveredBootstrapKubeconfig(ctx)
	if err != nil {
		a.Log.Error("the seed fails and the shoot cannot be asked for a new bootstrap kubeconfig", "error", err)
		return false
	}
	if delivered == nil {
		return false
	}
	err = s.src.TakeDelivered(ctx, delivered)
	switch {
	case err == nil:
		a.Metrics.ObserveDelivery(metrics.DeliveryTaken)
		return true
	case errors.Is(err, seedsource.ErrNothingNew):
	case errors.Is(err, seedsource.ErrRefused):
		a.Metrics.ObserveDelivery(metrics.DeliveryRefused)
		a.Log.Error("refused the bootstrap kubeconfig delivered through the shoot; nothing changed", "error", err)
	default:
		a.Metrics.ObserveDelivery(metrics.DeliveryFailed)
		a.Log.Error("taking the bootstrap kubeconfig delivered through the shoot", "error", err)
	}
	return false
}
