// Package app holds the firewall-agent command.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
)

// Version is set at build time:
// -ldflags "-X github.com/metal-firewall/gardener-extension-firewall/cmd/firewall-agent/app.Version=v1.2.3".
var Version = "dev"

// Options are the command line flags.
type Options struct {
	ConfigPath     string
	Once           bool
	PollInterval   time.Duration
	ResyncInterval time.Duration
	SeedInterval   time.Duration
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
	cmd.Flags().StringVar(&opts.ConfigPath, "config", config.DefaultPath, "path of the config file")
	cmd.Flags().BoolVar(&opts.Once, "once", false, "apply once and exit; non-zero exit and no change on failure")
	cmd.Flags().DurationVar(&opts.PollInterval, "poll-interval", time.Second, "how often to check the config file for changes")
	cmd.Flags().DurationVar(&opts.ResyncInterval, "resync-interval", time.Minute, "how often to re-apply without a change, repairing changes made by others")
	cmd.Flags().DurationVar(&opts.SeedInterval, "seed-interval", 10*time.Second, "how often to read the Firewall from the seed and write the heartbeat (seed source)")
	cmd.AddCommand(newRenderCommand())
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
	cmd.Flags().StringVar(&path, "config", config.DefaultPath, "path of the config file")
	return cmd
}

func run(ctx context.Context, opts *Options) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	a := &agent.Agent{
		ConfigPath:     opts.ConfigPath,
		Applier:        nftables.NewProgrammer(""),
		Log:            log,
		PollInterval:   opts.PollInterval,
		ResyncInterval: opts.ResyncInterval,
		SeedInterval:   opts.SeedInterval,
		Version:        Version,
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
	return a.Run(ctx)
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
