package metal

import (
	"fmt"
	"path"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
)

// Units of metal-stack's firewall image the userdata adds drop-ins to.
// os-installer renders firewall-controller.service and droptailer.service
// after it ran the userdata and enables them (pkg/services), so a mask
// written through the userdata would be undone; a drop-in stays.
const (
	networkdUnit           = "systemd-networkd.service"
	frrUnit                = "frr.service"
	firewallControllerUnit = "firewall-controller.service"
	droptailerUnit         = "droptailer.service"
	nftablesUnit           = "nftables.service"
	// dropInName names every drop-in the userdata writes.
	dropInName = "10-firewall-agent.conf"
	// ClosedTablePath is where the userdata puts the agent's closed table:
	// the image's /etc/nftables.conf flushes every table and includes every
	// file in /etc/nftables/ (metal-images firewall/context/etc/nftables.conf;
	// firewall-controller writes its table there too), so nftables.service
	// loads it in the same transaction as the image's own rules, at boot and
	// on every reload: there is no moment without the agent's table.
	ClosedTablePath = "/etc/nftables/firewall-agent"
)

// bootUnit runs the boot step after the image's nftables.service has loaded
// /etc/nftables.conf (whose "flush ruleset" would otherwise delete the
// agent's table) and before network-pre.target; a reload or restart of
// nftables.service runs it again (ReloadPropagatedFrom=, PartOf=), since both
// flush every table. It needs only local file systems: no network, no config.
var bootUnit = fmt.Sprintf(`[Unit]
Description=Install the firewall-agent's last good ruleset, or close forwarding, before the network comes up
DefaultDependencies=no
Wants=network-pre.target
After=local-fs.target %[4]s %[5]s
Before=network-pre.target shutdown.target
PartOf=%[4]s
ReloadPropagatedFrom=%[4]s
RequiresMountsFor=%[1]s
Conflicts=shutdown.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=%[2]s boot --last-good-ruleset %[3]s --config %[6]s --remove-userdata
ExecReload=%[2]s boot --last-good-ruleset %[3]s

[Install]
WantedBy=sysinit.target
`, agentconfigv1alpha1.StateDir, agentconfigv1alpha1.BinaryPath, agentconfigv1alpha1.LastGoodRulesetPath,
	nftablesUnit, agentconfigv1alpha1.InstallUnit, agentconfigv1alpha1.ConfigPath)

// requiresBoot is the drop-in for the units that bring up the network
// (systemd-networkd: interfaces, VRFs, addresses; FRR: BGP to the fabric):
// without a successful boot step they do not start, so the machine neither
// forwards nor announces a route, is never Ready and is replaced.
var requiresBoot = fmt.Sprintf(`[Unit]
Requires=%[1]s
After=%[1]s
`, agentconfigv1alpha1.BootUnit)

// notWithAgent is the drop-in that keeps firewall-controller and the
// droptailer client from ever starting on a machine the agent manages: the
// controller would reload nftables.service and write a table of its own.
var notWithAgent = fmt.Sprintf(`[Unit]
ConditionPathExists=!%s
`, agentconfigv1alpha1.ConfigPath)

// agentUnit runs the agent as firewall-controller runs on the image: in the
// VRF of the machine's default route (ip vrf exec), where seed, shoot and
// metal-api are reachable, and always restarted.
func agentUnit(vrf string) string {
	exec := agentconfigv1alpha1.BinaryPath
	if vrf != "" {
		exec = "/bin/ip vrf exec " + vrf + " " + exec
	}
	return fmt.Sprintf(`[Unit]
Description=firewall-agent: programs the firewall's nftables from its seed, shoot, metal-api or static config
Requires=%[1]s
After=%[1]s network.target %[2]s

[Service]
ExecStart=%[3]s --config %[4]s
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
`, agentconfigv1alpha1.BootUnit, frrUnit, exec, agentconfigv1alpha1.ConfigPath)
}

// Files of a release the userdata downloads, in agentconfigv1alpha1.ReleaseDir.
const (
	releaseBinary = "firewall-agent"
	// releaseSignature is the 64 raw bytes hack/sign-agent-release.sh writes.
	releaseSignature = "firewall-agent.sig"
	releaseMessage   = "message"
	releaseSHA256    = "sha256"
)

func releaseFile(name string) string { return path.Join(agentconfigv1alpha1.ReleaseDir, name) }

// installUnit installs the release the userdata downloaded, before the boot
// step needs the binary: Ignition checked its SHA-512 when it downloaded it;
// this checks that its SHA-256 is the one in the signed message and the
// operator's Ed25519 signature over that message (what the agent's
// self-update checks), with the image's own tools. Any failure leaves no
// binary, so the boot step fails and the network stays down.
var installUnit = fmt.Sprintf(`[Unit]
Description=Install the firewall-agent release the userdata downloaded, once its signature checks out
DefaultDependencies=no
After=local-fs.target
Before=%[1]s
ConditionPathExists=%[2]s
RequiresMountsFor=%[3]s

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/bin/sha256sum --check --strict --quiet %[4]s
ExecStart=/usr/bin/openssl pkeyutl -verify -pubin -inkey %[5]s -rawin -in %[6]s -sigfile %[7]s
ExecStart=/usr/bin/install -m 0755 -T %[2]s %[8]s
ExecStart=/usr/bin/rm -rf %[3]s

[Install]
WantedBy=sysinit.target
`, agentconfigv1alpha1.BootUnit, releaseFile(releaseBinary), agentconfigv1alpha1.ReleaseDir, releaseFile(releaseSHA256),
	agentconfigv1alpha1.UpdatePublicKeyPath, releaseFile(releaseMessage), releaseFile(releaseSignature), agentconfigv1alpha1.BinaryPath)
