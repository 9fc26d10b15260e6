package agent

import (
	"context"
	"path/filepath"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/selfupdate"
)

// newUpdater sets up the self-update when controllers.firewall.selfUpdate
// is configured; nil otherwise. Without a usable key, or turned off, the
// updater only reports why it is Disabled.
func (a *Agent) newUpdater(cfg *agentconfigv1alpha1.Config) *selfupdate.Updater {
	c := cfg.Controllers.Firewall
	if c == nil || c.SelfUpdate == nil {
		return nil
	}
	s := c.SelfUpdate
	u := &selfupdate.Updater{Version: a.Version, Executable: a.Executable, Args: a.Args, AllowDowngrade: s.AllowDowngrade,
		StatePath:     filepath.Join(filepath.Dir(a.ConfigPath), agentconfigv1alpha1.SelfUpdateStateFile),
		HealthTimeout: agentconfigv1alpha1.DefaultHealthTimeout, Client: a.UpdateClient, Log: a.Log.With("component", "selfupdate"),
		OnState: a.Metrics.ObserveSelfUpdate}
	if s.HealthTimeout != nil {
		u.HealthTimeout = s.HealthTimeout.Duration
	}
	keyPath := s.PublicKeyFile
	if a.UpdatePublicKey != "" {
		keyPath = a.UpdatePublicKey
	}
	switch {
	case !s.Enabled:
		u.DisabledReason = "controllers.firewall.selfUpdate.enabled is false"
	case keyPath == "":
		u.DisabledReason = "no update public key is configured (controllers.firewall.selfUpdate.publicKeyFile or --update-public-key): the agent does not update itself"
	case a.Executable == "":
		u.DisabledReason = "the agent's own binary is unknown"
	default:
		key, err := selfupdate.LoadPublicKey(keyPath)
		if err != nil {
			u.DisabledReason = err.Error() + ": the agent does not update itself"
		}
		u.Key = key
	}
	u.Start()
	return u
}

// offerUpdate hands the release the firewall controller's source names to
// the updater: the Firewall's agentVersion, agentURL and agentSHA256 from
// the seed (fw; nil when it was not read this round, and then nothing is
// offered), sources.static.agent from the config; the metal-api names none.
func (a *Agent) offerUpdate(ctx context.Context, cfg *agentconfigv1alpha1.Config, fw *fwv1alpha1.Firewall) {
	if a.updater == nil || cfg.Controllers.Firewall == nil {
		return
	}
	var rel *selfupdate.Release
	switch cfg.Controllers.Firewall.Source {
	case agentconfigv1alpha1.SourceSeed:
		if fw == nil {
			return
		}
		rel = &selfupdate.Release{Version: fw.Spec.AgentVersion, URL: fw.Spec.AgentURL, SHA256: fw.Spec.AgentSHA256}
	case agentconfigv1alpha1.SourceStatic:
		if r := cfg.Sources.Static.Agent; r != nil {
			rel = &selfupdate.Release{Version: r.Version, URL: r.URL, SHA256: r.SHA256}
		}
	}
	a.updater.Offer(ctx, rel)
}

// switchUpdate re-executes into a verified release, if one is ready; it
// returns only when there is none or the switch failed (then recorded).
func (a *Agent) switchUpdate() {
	if a.updater == nil {
		return
	}
	if err := a.updater.Switch(); err != nil {
		a.Log.Error("self-update: switching failed; this version runs on", "error", err)
	}
}

// updateStatus is the self-update's state for the heartbeat; nil without
// self-update.
func (a *Agent) updateStatus() *fwv1alpha1.SelfUpdateStatus {
	if a.updater == nil {
		return nil
	}
	return a.updater.Status()
}

// updateFromStatic offers sources.static.agent and switches to it when the
// firewall controller reads the static source, whose config has no
// heartbeat to wait for.
func (a *Agent) updateFromStatic(ctx context.Context, cfg *agentconfigv1alpha1.Config) {
	if c := cfg.Controllers.Firewall; c == nil || c.Source != agentconfigv1alpha1.SourceStatic {
		return
	}
	a.offerUpdate(ctx, cfg, nil)
	a.switchUpdate()
}
