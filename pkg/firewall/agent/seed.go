package agent

import (
	"context"
	"log/slog"

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

// read reads the Firewall into the agent's inputs and tells whether its
// traffic spec changed. When the seed refuses, a bootstrap kubeconfig
// delivered through the shoot may let the agent in again.
func (s *seedFirewall) read(ctx context.Context, a *Agent, cfg *agentconfigv1alpha1.Config) bool {
	if s.src == nil {
		return false
	}
	fw, err := s.src.Firewall(ctx)
	if err != nil && s.takeDeliveredBootstrap(ctx, a.shoot, a.Log) {
		fw, err = s.src.Firewall(ctx)
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

// takeDeliveredBootstrap looks, when the seed fails, for a bootstrap
// kubeconfig delivered through the shoot (after a control plane migration),
// sealed to this agent's key; a new one replaces the file and the agent
// bootstraps with it. It reports whether it did.
func (s *seedFirewall) takeDeliveredBootstrap(ctx context.Context, shoot *shootsource.Source, log *slog.Logger) bool {
	if shoot == nil {
		return false
	}
	delivered, err := shoot.DeliveredBootstrapKubeconfig(ctx)
	if err != nil {
		log.Error("the seed fails and the shoot cannot be asked for a new bootstrap kubeconfig", "error", err)
		return false
	}
	if delivered == nil {
		return false
	}
	took, err := s.src.TakeDelivered(ctx, delivered)
	if err != nil {
		log.Error("taking the bootstrap kubeconfig delivered through the shoot", "error", err)
	}
	return took
}
