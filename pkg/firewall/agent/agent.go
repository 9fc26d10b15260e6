package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bgpdistance"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metalsource"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/seedsource"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/selfupdate"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/shootsource"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/snataddr"
)

// Applier programs a ruleset; *nftables.Programmer is the real one.
type Applier interface {
	Apply(rs *ruleset.Ruleset) (nftables.Result, error)
}

// AddressKeeper puts the SNAT addresses on their interfaces;
// *snataddr.Manager is the real one.
type AddressKeeper interface {
	// Check refuses addresses that cannot be put in place, changing nothing.
	Check(want []snataddr.Address) error
	// Sync adds the missing addresses and removes those it added that are
	// no longer wanted.
	Sync(want []snataddr.Address) error
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
	// MetalInterval is how often the metal-api is asked for the firewall's
	// allocation when a controller uses the metal source.
	MetalInterval time.Duration
	// MetalTransport, if set, carries the metal source's requests (tests).
	MetalTransport http.RoundTripper
	// Addresses, if set, keeps the addresses the SNAT rules translate to on
	// their interfaces, so that replies to them arrive.
	Addresses AddressKeeper
	// Version is reported in the heartbeat.
	Version string
	// Metrics, if set, record the applies and the sources' health.
	Metrics *metrics.Metrics
	// Executable and Args are the agent's installed binary and arguments,
	// which the self-update replaces and restarts with.
	Executable string
	Args       []string
	// UpdatePublicKey, if set, is the self-update's key file, overriding
	// controllers.firewall.selfUpdate.publicKeyFile.
	UpdatePublicKey string
	// UpdateClient, if set, downloads releases (tests).
	UpdateClient *http.Client
	// LastGoodPath, if set, is where each ruleset the kernel accepted is
	// saved for the boot step (see Boot), and where Run finds the ruleset
	// to install when it starts and the kernel holds no table of its own.
	LastGoodPath string
	// Vtysh and FRRReload, if set, replace FRR's programs the distance is
	// checked and applied with (tests).
	Vtysh, FRRReload string
	// NFLogNetNS, if set, is the network namespace whose logged packets
	// the drop log reads (tests, where the Applier programs another
	// namespace); the agent's own otherwise.
	NFLogNetNS string
	// DeliveryAfter is how long the seed may fail to answer before the agent
	// looks for a bootstrap kubeconfig delivered through the shoot;
	// DefaultDeliveryAfter when 0. A seed that refuses the agent (401, 403)
	// has it look at once.
	DeliveryAfter time.Duration

	// seedFailingSince is when the seed's reads began to fail; zero while
	// they succeed.
	seedFailingSince time.Time
	// in is what the agent last read from the seed and the shoot.
	in Inputs
	// policiesRead and servicesRead tell whether the shoot's policies and
	// Services were read once.
	policiesRead, servicesRead bool
	// firstBoot is set when the kernel held no table of the agent at start:
	// there is nothing to keep, and enforcing the rest without the shoot's
	// policies (closed) beats enforcing nothing (open) until the shoot answers.
	firstBoot bool
	// shoot is the shoot source, when configured.
	shoot *shootsource.Source
	// metal is the metal source, when a controller reads it.
	metal *metalsource.Source
	// monitor holds the conditions the FirewallMonitor reports.
	monitor monitorState
	// lastShootRun is when what was read from the shoot was last in force.
	lastShootRun *metav1.Time
	// appliedGeneration is the generation of the Firewall whose spec is in force.
	appliedGeneration int64
	// builder builds the rulesets: after the first, a change costs in
	// proportion to what changed, not to all policies.
	builder ruleset.Builder
	// dnsProxy enforces the policies' toFQDNs, when dnsConfig (the config's
	// dns section as it was at start) turns it on.
	dnsProxy  *dnsproxy.Proxy
	dnsConfig *agentconfigv1alpha1.DNS
	// updater is the self-update, when the config has one (set up at start).
	updater *selfupdate.Updater
	// saved tells whether this run saved the last good ruleset once: an
	// unchanged apply saves nothing after that.
	saved bool
	// devices are the interfaces of the config last applied, whose counters
	// scrapes and the FirewallMonitor report.
	devices atomic.Pointer[deviceSet]
	// announcer announces the Firewall's distance, when the config has routing.
	announcer *bgpdistance.Announcer
	// distance applies the announcer's distances beside the rounds.
	distance *distanceWorker
	// internalMetrics serves the metrics on the internal address (config
	// metrics), guarded by the table's input rules.
	internalMetrics *metricsServer
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

func (a *Agent) apply(cfg *agentconfigv1alpha1.Config) (res nftables.Result, err error) {
	start := time.Now()
	var rs *ruleset.Ruleset
	defer func() { a.Metrics.ObserveApply(rs, res, err, time.Since(start)) }()
	rs, err = desired(a.builder.Build, cfg, a.in, a.dnsConfig)
	if err != nil {
		return nftables.Result{}, err
	}
	var addrs []snataddr.Address
	if a.Addresses != nil {
		// Refused before the ruleset is touched: an address that cannot be
		// put in place would SNAT to an address no reply reaches.
		if addrs, err = snataddr.FromRuleset(rs); err == nil {
			err = a.Addresses.Check(addrs)
		}
		if err != nil {
			return nftables.Result{}, err
		}
	}
	res, err = a.Applier.Apply(rs)
	if err != nil {
		return res, fmt.Errorf("applying ruleset: %w", err)
	}
	a.saveLastGood(rs, res)
	if err := openImageTable(a.Applier, rs, a.Log); err != nil {
		return res, err
	}
	if a.Addresses != nil {
		// After the rules: an address is removed only once no rule uses it.
		if err := a.Addresses.Sync(addrs); err != nil {
			return res, fmt.Errorf("the ruleset is applied, but not its SNAT addresses: %w", err)
		}
	}
	if a.dnsProxy != nil {
		if err := a.dnsProxy.SetSelectors(rs.FQDN); err != nil {
			return res, fmt.Errorf("DNS proxy: %w", err)
		}
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
		a.Metrics.ObserveSource(metrics.SourceStatic, err)
		return fmt.Errorf("reading config: %w", err)
	}
	cfg, err := config.ParseInDir(data, filepath.Dir(a.ConfigPath))
	if err != nil {
		a.Metrics.ObserveSource(metrics.SourceStatic, err)
		return err
	}
	a.observeStatic(cfg, nil)
	a.updater = a.newUpdater(cfg)
	a.Metrics.WatchDevices(a, a.Log)
	defer func() { a.internalMetrics.close() }()
	if cfg.DNS != nil {
		if err := a.startDNSProxy(ctx, cfg.DNS, proxyDevices(cfg)); err != nil {
			return err
		}
	}
	src, err := a.sources(cfg)
	if err != nil {
		return err
	}
	if cfg.DropLog != nil {
		a.startDropLog(ctx, cfg)
	}
	a.firstBoot = a.startTable()
	var sourceTick <-chan time.Time
	synced := false
	if src != nil || a.shoot != nil || a.metal != nil {
		t := time.NewTicker(a.sourceInterval(src != nil || a.shoot != nil))
		defer t.Stop()
		sourceTick = t.C
		// A restart must not flush the rules in force: nothing is applied
		// until the seed, the shoot or the metal-api have said what to enforce.
		synced = a.syncSources(ctx, src, cfg)
	}
	// Once is enough: what the sources said is in force already.
	if !synced && a.ready(cfg) {
		if err := a.applyLogged(cfg, "startup"); err != nil {
			return err
		}
	}
	a.updateFromStatic(ctx, cfg)
	lastSum := sha256.Sum256(data)
	lastGood := cfg
	lastApply := time.Now()
	// lastParseErr is why the file as it is now was refused, if it was.
	var lastParseErr error

	ticker := time.NewTicker(a.PollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			a.Log.Info("stopping; the ruleset stays in force")
			return nil
		case <-sourceTick:
			a.syncSources(ctx, src, lastGood)
			// The internal address may have come up since the last apply.
			a.serveInternalMetrics(ctx, lastGood)
			continue
		case <-ticker.C:
		}
		a.updateFromStatic(ctx, lastGood)
		data, err := os.ReadFile(a.ConfigPath)
		if err != nil {
			a.observeStatic(lastGood, err)
			a.Log.Error("reading config; keeping the ruleset in force", "error", err)
			continue
		}
		if sum := sha256.Sum256(data); !bytes.Equal(sum[:], lastSum[:]) {
			lastSum = sum
			cfg, err := config.ParseInDir(data, filepath.Dir(a.ConfigPath))
			lastParseErr = err
			if err != nil {
				a.observeStatic(lastGood, err)
				a.Log.Error("config changed but is invalid; keeping the ruleset in force", "error", err)
				continue
			}
			lastGood = cfg
			a.observeStatic(cfg, nil)
			if !a.ready(cfg) {
				a.Log.Error("config changed, but it needs a source that has not answered yet (sources are set up at start: restart the agent after adding one); the ruleset in force stays")
				continue
			}
			if err := a.applyLogged(cfg, "config changed"); err == nil {
				lastApply = time.Now()
			}
			continue
		}
		a.observeStatic(lastGood, lastParseErr)
		if time.Since(lastApply) >= a.ResyncInterval && a.ready(lastGood) {
			if f, ok := a.Applier.(interface{ Forget() }); ok {
				f.Forget()
			}
			if err := a.applyLogged(lastGood, "resync"); err == nil {
				lastApply = time.Now()
			}
		}
	}
}

func (a *Agent) applyLogged(cfg *agentconfigv1alpha1.Config, reason string) error {
	res, err := a.apply(cfg)
	if err != nil {
		a.Log.Error("apply failed; the previous ruleset stays in force", "reason", reason, "error", err)
		return err
	}
	if a.updater != nil {
		// A version on trial is healthy once it applied: it installs itself.
		a.updater.Applied()
	}
	if res.Mode != nftables.Unchanged || reason != "resync" {
		a.Log.Info("ruleset applied", "reason", reason, "mode", string(res.Mode), "added", res.Added, "deleted", res.Deleted, "duration", res.Duration)
	}
	// After the apply: the guard of the metrics port is in force before the
	// port opens.
	a.devices.Store(devicesOf(withMetalNetworks(cfg, a.in.Metal)))
	a.serveInternalMetrics(context.Background(), cfg)
	return nil
}

// observeStatic records a read of the config file, the static source, if a
// controller of cfg uses it.
func (a *Agent) observeStatic(cfg *agentconfigv1alpha1.Config, err error) {
	for _, c := range []*agentconfigv1alpha1.Controller{cfg.Controllers.Firewall, cfg.Controllers.CWNP} {
		if c != nil && c.Source == agentconfigv1alpha1.SourceStatic {
			a.Metrics.ObserveSource(metrics.SourceStatic, err)
			return
		}
	}
}

// sourceInterval is how often the API sources are read: the shortest
// interval of the sources in use.
func (a *Agent) sourceInterval(kubernetes bool) time.Duration {
	if a.SeedInterval <= 0 {
		a.SeedInterval = 10 * time.Second
	}
	if a.MetalInterval <= 0 {
		a.MetalInterval = 10 * time.Second
	}
	switch {
	case a.metal == nil:
		return a.SeedInterval
	case !kubernetes:
		return a.MetalInterval
	}
	return min(a.SeedInterval, a.MetalInterval)
}

// sources returns the seed source when a controller reads from the seed, and
// sets up the shoot source when the shoot is configured and the metal source
// when a controller reads the metal-api.
func (a *Agent) sources(cfg *agentconfigv1alpha1.Config) (*seedsource.Source, error) {
	usesSeed := cfg.Controllers.Firewall != nil && cfg.Controllers.Firewall.Source == agentconfigv1alpha1.SourceSeed && cfg.Sources.Seed != nil
	if !usesSeed && !usesShoot(cfg) && !usesMetal(cfg) {
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
		a.shoot = &shootsource.Source{Config: *s, Name: name, Log: a.Log.With("source", "shoot")}
	}
	if usesMetal(cfg) && cfg.Sources.Metal != nil {
		a.metal = newMetalSource(cfg, name, a)
	}
	if !usesSeed {
		return nil, nil
	}
	return &seedsource.Source{Config: *cfg.Sources.Seed, Name: name, Version: a.Version, Log: a.Log.With("source", "seed")}, nil
}

// usesShoot tells whether a controller reads from the shoot.
func usesShoot(cfg *agentconfigv1alpha1.Config) bool {
	for _, c := range []*agentconfigv1alpha1.Controller{cfg.Controllers.CWNP, cfg.Controllers.Service, cfg.Controllers.Monitor} {
		if c != nil && c.Source == agentconfigv1alpha1.SourceShoot {
			return true
		}
	}
	return false
}

// policiesFromShoot tells whether the cwnp controller reads the shoot.
func policiesFromShoot(cfg *agentconfigv1alpha1.Config) bool {
	return cfg.Controllers.CWNP != nil && cfg.Controllers.CWNP.Source == agentconfigv1alpha1.SourceShoot
}

// servicesFromShoot tells whether the service controller reads the shoot.
func servicesFromShoot(cfg *agentconfigv1alpha1.Config) bool {
	return cfg.Controllers.Service != nil && cfg.Controllers.Service.Source == agentconfigv1alpha1.SourceShoot
}

// ready tells whether every API source the config uses has been read once;
// before that, applying would enforce less than the firewall should.
func (a *Agent) ready(cfg *agentconfigv1alpha1.Config) bool {
	if c := cfg.Controllers.Firewall; c != nil && c.Source == agentconfigv1alpha1.SourceSeed && a.in.Seed == nil {
		return false
	}
	if c := cfg.Controllers.Firewall; c != nil && c.Source == agentconfigv1alpha1.SourceMetal && a.in.Metal == nil {
		return false
	}
	if a.firstBoot {
		return true
	}
	policiesFromMetal := cfg.Controllers.CWNP != nil && cfg.Controllers.CWNP.Source == agentconfigv1alpha1.SourceMetal
	return (!policiesFromShoot(cfg) || a.policiesRead) && (!servicesFromShoot(cfg) || a.servicesRead) && (!policiesFromMetal || a.in.Metal != nil)
}

// imageOpener is an Applier that can open the firewall image's own table to
// what the agent's table decides on; *nftables.Programmer is one.
type imageOpener interface {
	OpenImageTable(openings []*ruleset.Rule) (bool, error)
}

// openImageTable opens the firewall image's table (metal-stack's inet metal)
// once the agent's table rs is in place: in the kernel only, so that a
// reload or a reboot brings the image's drop back until the agent is back.
func openImageTable(k Applier, rs *ruleset.Ruleset, log *slog.Logger) error {
	o, ok := k.(imageOpener)
	if !ok {
		return nil
	}
	changed, err := o.OpenImageTable(rs.Openings)
	if err != nil {
		return fmt.Errorf("the ruleset is applied, but the firewall image's table %s still drops what it allows: %w", nftables.ImageTable, err)
	}
	if changed {
		log.Info("opened the firewall image's own table to what the agent's table decides on (in the kernel only)", "table", "inet "+nftables.ImageTable)
	}
	return nil
}

// tableChecker is an Applier that can tell whether a table exists;
// *nftables.Programmer is one.
type tableChecker interface {
	TableExists(name string) (bool, error)
}

// chainChecker is an Applier that can tell whether a chain exists;
// *nftables.Programmer is one.
type chainChecker interface {
	ChainExists(table, chain string) (bool, error)
}
