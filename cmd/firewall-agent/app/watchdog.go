package app

import (
	"context"
	"log/slog"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/selfupdate"
)

// newWatchdogCommand is the hidden command the self-update starts, from the
// old binary, beside a new version on trial: it rolls back and restarts the
// old version when the new one stops or does not apply the ruleset in time.
func newWatchdogCommand() *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:           selfupdate.WatchdogCommand,
		Short:         "Watch a new agent version on trial and roll it back when it fails (started by the self-update)",
		Hidden:        true,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "selfupdate-watchdog")
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return selfupdate.Watch(ctx, state, log, func(exe string, args []string) error {
				log.Info("restarting the previous agent version", "executable", exe)
				return syscall.Exec(exe, append([]string{exe}, args...), os.Environ())
			})
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "the self-update's state file")
	return cmd
}
