package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bootstrap"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/seed"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/shoot"
)

// Applier programs a ruleset; *nftables.Programmer is the real one.
type Applier interface {
	Apply(rs *ruleset.Ruleset) (nftables.Result, error)
}

// Agent applies the ruleset its config file describes and keeps it applied.
type Agent struct {
	ConfigPath string
	Applier    Applier
	Log        *slog.Logger
	// PollInterval is how often the config file is checked for changes.
	PollInterval time.Duration
	// ResyncInterval is how often the ruleset is re-applied even without a
	// change, which repairs changes made behind the agent's back. Cheap: an
	// unchanged ruleset sends nothing.
	ResyncInterval time.Duration
	// SeedInterval is how often the seed is read and the heartbeat written
	// when a controller uses the seed source.
	SeedInterval time.Duration
	// Version is reported in the heartbeat.
	Version string

	// seedSpec is the Firewall's traffic spec as last read from the seed.
	seedSpec *fwv1alpha1.FirewallTrafficSpec
	// shoot is the shoot source, when configured next to the seed source.
	shoot *shoot.Source
}

// ApplyOnce loads and validates the config and applies it. A bad config or a
// refused batch changes nothing in the kernel.
func (a *Agent) ApplyOnce() (nftables.Result, error) {
	cfg, err := config.Load(a.ConfigPath)
	if err != nil {
		return nftables.Result{}, err
	}
	return a.apply(cfg)
}

func (a *Agent) apply(cfg *config.Config) (nftables.Result, error) {
	rs, err := Desired(cfg, a.seedSpec)
	if err != nil {
		return nftables.Result{}, err
	}
	res, err := a.Applier.Apply(rs)
	if err != nil {
		return res, fmt.Errorf("applying ruleset: %w", err)
	}
	return res, nil
}

// Run applies the config, then watches the file (by polling its content,
// which also sees atomic renames and ConfigMap symlink swaps) and re-applies
// on change and every ResyncInterval. The first config must be valid, so a
// mistake shows at startup; later, a bad config is logged and the ruleset in
// force stays as it is. Run returns when ctx is done.
func (a *Agent) Run(ctx context.Context) error {
	if a.PollInterval <= 0 {
		a.PollInterval = time.Second
	}
	if a.ResyncInterval <= 0 {
		a.ResyncInterval = time.Minute
	}
	data, err := os.ReadFile(a.ConfigPath)
	if err != nil {
		return fmt.Errorf("reading config: %w", err)
	}
	cfg, err := config.Parse(data)
	if err != nil {
		return err
	}
	src, err := a.seedSource(cfg)
	if err != nil {
		return err
	}
	var seedTick <-chan time.Time
	if src != nil {
		if a.SeedInterval <= 0 {
			a.SeedInterval = 10 * time.Second
		}
		t := time.NewTicker(a.SeedInterval)
		defer t.Stop()
		seedTick = t.C
		// A restart must not flush the rules in force: nothing is applied
		// until the seed has said what the firewall's spec is.
		a.syncSeed(ctx, src, cfg)
	}
	if src == nil || a.seedSpec != nil {
		if err := a.applyLogged(cfg, "startup"); err != nil {
			return err
		}
	}
	lastSum := sha256.Sum256(data)
	lastGood := cfg
	lastApply := time.Now()

	ticker := time.NewTicker(a.PollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			a.Log.Info("stopping; the ruleset stays in force")
			return nil
		case <-seedTick:
			a.syncSeed(ctx, src, lastGood)
			continue
		case <-ticker.C:
		}
		data, err := os.ReadFile(a.ConfigPath)
		if err != nil {
			a.Log.Error("reading config; keeping the ruleset in force", "error", err)
			continue
		}
		if sum := sha256.Sum256(data); !bytes.Equal(sum[:], lastSum[:]) {
			lastSum = sum
			cfg, err := config.Parse(data)
			if err != nil {
				a.Log.Error("config changed but is invalid; keeping the ruleset in force", "error", err)
				continue
			}
			lastGood = cfg
			if err := a.applyLogged(cfg, "config changed"); err == nil {
				lastApply = time.Now()
			}
			continue
		}
		if time.Since(lastApply) >= a.ResyncInterval {
			if f, ok := a.Applier.(interface{ Forget() }); ok {
				f.Forget()
			}
			if err := a.applyLogged(lastGood, "resync"); err == nil {
				lastApply = time.Now()
			}
		}
	}
}

func (a *Agent) applyLogged(cfg *config.Config, reason string) error {
	res, err := a.apply(cfg)
	if err != nil {
		a.Log.Error("apply failed; the previous ruleset stays in force", "reason", reason, "error", err)
		return err
	}
	if res.Mode != nftables.Unchanged || reason != "resync" {
		a.Log.Info("ruleset applied", "reason", reason, "mode", string(res.Mode), "added", res.Added, "deleted", res.Deleted, "duration", res.Duration)
	}
	return nil
}

// seedSource returns the seed source when a controller reads from the seed.
func (a *Agent) seedSource(cfg *config.Config) (*seed.Source, error) {
	if c := cfg.Controllers.Firewall; c == nil || c.Source != config.SourceSeed || cfg.Sources.Seed == nil {
		return nil, nil
	}
	name := cfg.Name
	if name == "" {
		var err error
		if name, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("name: not set and no hostname: %w", err)
		}
	}
	if s := cfg.Sources.Shoot; s != nil && s.Kubeconfig != "" {
		a.shoot = &shoot.Source{Config: *s, Name: name, Log: a.Log.With("source", "shoot")}
	}
	return &seed.Source{Config: *cfg.Sources.Seed, Name: name, Version: a.Version, Log: a.Log.With("source", "seed")}, nil
}

// syncSeed reads the Firewall from the seed, re-applies when its spec
// changed, and writes the heartbeat. Losing the seed keeps the ruleset in force.
func (a *Agent) syncSeed(ctx context.Context, src *seed.Source, cfg *config.Config) {
	fw, err := src.Firewall(ctx)
	if err != nil && a.takeDeliveredBootstrap(ctx, src) {
		fw, err = src.Firewall(ctx)
	}
	if err != nil {
		a.Log.Error("reading the Firewall from the seed; the ruleset in force stays", "error", err)
		return
	}
	a.refreshShootKubeconfig(ctx, src, cfg)
	var applyErr error
	if spec := fw.Spec.FirewallTrafficSpec; a.seedSpec == nil || !equality.Semantic.DeepEqual(*a.seedSpec, spec) {
		previous := a.seedSpec
		a.seedSpec = &spec
		if applyErr = a.applyLogged(cfg, "firewall changed in the seed"); applyErr != nil {
			a.seedSpec = previous
		}
	}
	message := ""
	if applyErr != nil {
		message = applyErr.Error()
	}
	if err := src.Heartbeat(ctx, fw, message); err != nil {
		a.Log.Error("writing the heartbeat", "error", err)
	}
}

// refreshShootKubeconfig keeps the shoot kubeconfig on disk as fresh as the
// TokenRequestor keeps it in the seed: when the seed goes away (migration),
// the shoot must still be reachable with a valid token.
func (a *Agent) refreshShootKubeconfig(ctx context.Context, src *seed.Source, cfg *config.Config) {
	if a.shoot == nil || cfg.Sources.Shoot.AccessSecret == "" {
		return
	}
	secret, err := src.Secret(ctx, cfg.Sources.Shoot.AccessSecret)
	if err != nil {
		a.Log.Error("reading the shoot access secret from the seed", "secret", cfg.Sources.Shoot.AccessSecret, "error", err)
		return
	}
	if err := a.shoot.Store(secret.Data[shoot.AccessSecretKubeconfigKey]); err != nil {
		a.Log.Error("storing the shoot kubeconfig", "error", err)
	}
}

// takeDeliveredBootstrap looks, when the seed fails, for a bootstrap
// kubeconfig delivered through the shoot (after a control plane migration).
// A new one replaces the file and the agent bootstraps with it; it reports
// whether it did.
func (a *Agent) takeDeliveredBootstrap(ctx context.Context, src *seed.Source) bool {
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
	path := src.Config.BootstrapKubeconfig
	// The path is sources.seed.bootstrapKubeconfig of the admin's own config file.
	if current, err := os.ReadFile(path); err == nil && bytes.Equal(current, delivered) { //nolint:gosec // not user input
		return false
	}
	if err := bootstrap.WriteSecretFile(path, delivered); err != nil {
		a.Log.Error("writing the delivered bootstrap kubeconfig", "path", path, "error", err)
		return false
	}
	a.Log.Info("a new bootstrap kubeconfig arrived through the shoot; bootstrapping with it", "path", path)
	if err := src.Rebootstrap(ctx); err != nil {
		a.Log.Error("bootstrapping with the delivered kubeconfig", "error", err)
		return false
	}
	return true
}
