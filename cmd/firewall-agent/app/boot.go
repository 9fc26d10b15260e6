package app

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bgpdistance"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/userdata"
)

// lastGoodUsage describes the --last-good-ruleset flag of both commands.
const lastGoodUsage = "file (0600) where the agent saves each ruleset the kernel accepted, for the boot step"

// newBootCommand returns the boot subcommand, which a machine runs before
// its network comes up (see the firewall-agent-boot unit).
func newBootCommand() *cobra.Command {
	var (
		path, configPath string
		removeUserdata   bool
	)
	cmd := &cobra.Command{
		Use:   "boot",
		Short: "Install the last good ruleset, or a table that drops all forwarding; run before the network is up",
		Long: `boot installs, in one batch, the ruleset the agent last applied (saved at
--last-good-ruleset) or, when there is none or it cannot be read, a table
that drops everything forwarded. If the kernel holds the agent's table
already it changes nothing. It contacts nobody. With --config it then fails
when the agent's config is missing or invalid: the agent could never run,
and a machine that cannot filter must not bring its network up (the boot
unit's drop-ins make systemd-networkd and FRR require this step).`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error {
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			if _, err := agent.Boot(nftables.NewProgrammer(""), path, log); err != nil {
				return err
			}
			if configPath != "" {
				// After the table: even a machine refused here forwards nothing.
				cfg, err := config.Load(configPath)
				if err != nil {
					return fmt.Errorf("boot: the agent could not run: %w", err)
				}
				if r := cfg.Routing; r != nil {
					// Before FRR starts: a new machine attracts no traffic
					// until the agent applies its Firewall's distance. The
					// agent reports an error here in its status.
					wrote, err := bgpdistance.Prepare(r.FRRConfig, r.PeerGroup, int(firewallv1alpha1.LongestDistance))
					switch {
					case err != nil:
						log.Error("boot: FRR's configuration takes no distance", "error", err)
					case wrote:
						log.Info("boot: FRR starts announcing the longest distance", "distance", firewallv1alpha1.LongestDistance)
					}
				}
			}
			if removeUserdata {
				// The table is in place: a failure here is logged, not fatal,
				// for it must not keep the machine off the network.
				changed, err := userdata.Remove("/")
				for _, p := range changed {
					log.Info("boot: removed the userdata copy", "path", p)
				}
				if err != nil {
					log.Error("boot: could not remove every userdata copy; it holds the boot credential until that expires", "error", err)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "last-good-ruleset", agentconfigv1alpha1.LastGoodRulesetPath, lastGoodUsage)
	cmd.Flags().StringVar(&configPath, "config", "", "the agent's config file: boot fails, after installing the table, when it is missing or invalid")
	cmd.Flags().BoolVar(&removeUserdata, "remove-userdata", false,
		"after the table is in place, remove what metal-stack's installer keeps of the userdata (/config.ign, /etc/metal/userdata, the userdata field of /etc/metal/machine-allocation.yaml): it holds the boot credential")
	return cmd
}
