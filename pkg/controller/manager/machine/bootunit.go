package machine

import (
	"fmt"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
)

// BootUnitName is the systemd unit the Ignition config enables to run
// `firewall-agent boot` on every boot.
const BootUnitName = "firewall-agent-boot.service"

// bootUnit orders the boot step before network-pre.target, as Debian's
// nftables.service does, so that no interface forwards before the agent's
// table is in the kernel. It needs only local file systems: no network, no
// config, no source.
var bootUnit = fmt.Sprintf(`[Unit]
Description=Install the firewall-agent's last good ruleset, or close forwarding, before the network comes up
DefaultDependencies=no
Wants=network-pre.target
Before=network-pre.target shutdown.target
After=local-fs.target
RequiresMountsFor=%[1]s
Conflicts=shutdown.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=%[2]s boot --last-good-ruleset %[3]s

[Install]
WantedBy=sysinit.target
`, agentconfigv1alpha1.StateDir, agentconfigv1alpha1.BinaryPath, agentconfigv1alpha1.LastGoodRulesetPath)
