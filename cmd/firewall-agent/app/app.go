// Package app holds the firewall-agent command.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/selfupdate"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/snataddr"
)

// Version is set at build time:
// -ldflags "-X github.com/metal-firewall/gardener-extension-firewall/cmd/firewall-agent/app.Version=v1.2.3".
var Version = "dev"

// DefaultMetricsBindAddress is where the agent serves /metrics unless told
// otherwise: the loopback only. The agent's table filters forwarded traffic,
// not traffic to the firewall itself, so a listener on every interface
// would answer the internet.
const DefaultMetricsBindAddress = "127.0.0.1:2112"

// Options are the command line flags.
type Options struct {
	ConfigPath         string
	Once               bool
	PollInterval       time.Duration
	ResyncInterval     time.Duration
	SeedInterval       time.Duration
	MetalInterval      time.Duration
	MetricsBindAddress string
	SNATRecord         string
	UpdatePublicKey    string
	LastGoodRuleset    string
}

// NewCommand returns the firewall-agent command with its render subcommand.
// Errors are not printed by cobra; Main prints them once.
func NewCommand() *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "firewall-agent",
		Short: "Program the firewall's nftables ruleset from its config file",
		Long: `firewall-agent reads its config file, merges what its controllers contribute
and programs the nftables table "inet firewall-agent" through netlink, as one
atomic batch. Without --once it keeps running, watches the config file and
re-applies on change; a bad config is logged and the ruleset in force stays.`,
		Version:       Version,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), opts)
		},
	}
	cmd.SetVersionTemplate("firewall-agent {{.Version}}\n")
	cmd.Flags().StringVar(&opts.ConfigPath, "config", agentconfigv1alpha1.ConfigPath, "path of the config file")
	cmd.Flags().BoolVar(&opts.Once, "once", false, "apply once and exit; non-zero exit and no change on failure")
	cmd.Flags().DurationVar(&opts.PollInterval, "poll-interval", time.Second, "how often to check the config file for changes")
	cmd.Flags().DurationVar(&opts.ResyncInterval, "resync-interval", time.Minute, "how often to re-apply without a change, repairing changes made by others")
	cmd.Flags().DurationVar(&opts.SeedInterval, "seed-interval", 10*time.Second, "how often to read the Firewall from the seed and write the heartbeat (seed source)")
	cmd.Flags().DurationVar(&opts.MetalInterval, "metal-interval", 10*time.Second, "how often to ask the metal-api for this firewall's allocation (metal source); an unchanged allocation is neither converted nor applied")
	cmd.Flags().StringVar(&opts.MetricsBindAddress, "metrics-bind-address", DefaultMetricsBindAddress,
		`address to serve Prometheus metrics on (/metrics); "0" or "" turns them off. Keep it off public interfaces: the agent filters only its config's metrics port (config metrics) on input; for the shoot, set metrics.internalNetwork in the config instead`)
	cmd.Flags().StringVar(&opts.SNATRecord, "snat-address-record", snataddr.DefaultRecordPath,
		"file (0600) recording the SNAT addresses the agent put on interfaces; only those are ever removed")
	cmd.Flags().StringVar(&opts.UpdatePublicKey, "update-public-key", "",
		"PEM file of the Ed25519 public key agent releases must be signed with (overrides controllers.firewall.selfUpdate.publicKeyFile); without a key the agent does not update itself")
	cmd.Flags().StringVar(&opts.LastGoodRuleset, "last-good-ruleset", agentconfigv1alpha1.LastGoodRulesetPath, lastGoodUsage+
		`; also installed at start when the kernel holds no table of the agent. "" turns saving off`)
	cmd.AddCommand(newRenderCommand(), newWatchdogCommand(), newBootCommand(), newDroptailerCommand())
	return cmd
}

func newRenderCommand() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:           "render",
		Short:         "Print the ruleset the config describes in nft syntax; change nothing",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := agent.Render(path)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), out)
			return err
		},
	}
	cmd.Flags().StringVar(&path, "config", agentconfigv1alpha1.ConfigPath, "path of the config file")
	return cmd
}

func run(ctx context.Context, opts *Options) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// The API clients' warnings (e.g. a field the seed's CRD does not know
	// yet) go into the agent's log, not as a stack trace about a missing logger.
	ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))
	programmer := nftables.NewProgrammer("")
	a := &agent.Agent{
		ConfigPath:      opts.ConfigPath,
		Applier:         programmer,
		Addresses:       &snataddr.Manager{RecordPath: opts.SNATRecord},
		Log:             log,
		PollInterval:    opts.PollInterval,
		ResyncInterval:  opts.ResyncInterval,
		SeedInterval:    opts.SeedInterval,
		MetalInterval:   opts.MetalInterval,
		Version:         Version,
		Args:            os.Args[1:],
		UpdatePublicKey: opts.UpdatePublicKey,
		LastGoodPath:    opts.LastGoodRuleset,
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			a.Executable = selfupdate.StablePath(exe)
		}
	}
	if opts.Once {
		res, err := a.ApplyOnce()
		if err != nil {
			return err
		}
		log.Info("ruleset applied", "mode", string(res.Mode), "added", res.Added, "deleted", res.Deleted, "duration", res.Duration)
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("starting", "version", Version, "config", opts.ConfigPath)
	// Also served on the internal address when the config's metrics say so.
	a.Metrics = metrics.New(Version, programmer, log)
	if addr := opts.MetricsBindAddress; addr != "" && addr != "0" {
		go serveMetrics(ctx, addr, a.Metrics.Handler(), log)
	}
	return a.Run(ctx)
}

// metricsRetry is how long the agent waits before it tries again to listen
// for metrics.
const metricsRetry = 10 * time.Second

// serveMetrics serves handler on addr at /metrics until ctx is done. An
// address that cannot be bound (taken, not on this machine) is logged and
// tried again every metricsRetry: the firewall's rules must never wait for
// its metrics.
func serveMetrics(ctx context.Context, addr string, handler http.Handler, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", handler)
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	for {
		l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
		if err == nil {
			log.Info("serving metrics", "address", l.Addr().String(), "path", "/metrics")
			if err := server.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("serving metrics", "error", err)
			}
			return
		}
		log.Error("cannot listen for metrics; the agent runs on and tries again", "address", addr, "retry", metricsRetry, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(metricsRetry):
		}
	}
}

// Main runs the command and returns the process exit code, printing an error
// (a bad flag, an invalid config, a refused apply) to stderr.
func Main() int {
	if err := NewCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "firewall-agent:", err)
		return 1
	}
	return 0
}
