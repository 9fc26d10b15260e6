package app

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
)

// lastGoodUsage describes the --last-good-ruleset flag of both commands.
const lastGoodUsage = "file (0600) where the agent saves each ruleset the kernel accepted, for the boot step"

// newBootCommand returns the boot subcommand, which a machine runs before
// its network comes up (see the firewall-agent-boot unit).
func newBootCommand() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "boot",
		Short: "Install the last good ruleset, or a table that drops all forwarding; run before the network is up",
		Long: `boot installs, in one batch, the ruleset the agent last applied (saved at
--last-good-ruleset) or, when there is none or it cannot be read, a table
that drops everything forwarded. If the kernel holds the agent's table
already it changes nothing. It reads no config and contacts nobody.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error {
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			_, err := agent.Boot(nftables.NewProgrammer(""), path, log)
			return err
		},
	}
	cmd.Flags().StringVar(&path, "last-good-ruleset", agentconfigv1alpha1.LastGoodRulesetPath, lastGoodUsage)
	return cmd
}
