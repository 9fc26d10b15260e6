package v1alpha1

import "time"

// CertificateDuration is the validity of the seed client certificate an
// agent asks for. The extension's CSR approver must allow at least this
// (--csr-max-duration), or it would deny every firewall.
const CertificateDuration = 12 * time.Hour

// APIRequestTimeout bounds one request of the agent to the seed's or the
// shoot's kube-apiserver: one that accepts connections and never answers
// holds the agent's round (and every other source's) for at most this long.
const APIRequestTimeout = 15 * time.Second

// Paths of the agent's files on a firewall machine. The extension writes the
// config and the bootstrap kubeconfig into the userdata; the agent writes the
// kubeconfigs it obtains itself (0600).
const (
	// Dir holds every file of the agent.
	Dir = "/etc/firewall-agent"
	// ConfigPath is where the agent reads its configuration.
	ConfigPath = Dir + "/config.yaml"
	// BootstrapKubeconfigPath holds the short-lived credential the agent
	// requests its seed client certificate with.
	BootstrapKubeconfigPath = Dir + "/bootstrap.kubeconfig"
	// SeedKubeconfigPath is where the agent keeps its certificate-based seed kubeconfig.
	SeedKubeconfigPath = Dir + "/seed.kubeconfig"
	// IdentityKeyPath is the agent's identity key (see SeedSource.IdentityKey).
	IdentityKeyPath = Dir + "/agent.key"
	// DeliveryStatePath is the delivery key the agent pinned from its seed
	// and the generation of the last delivery it took (see DeliveryStateOf).
	DeliveryStatePath = Dir + "/delivery.json"
	// ShootKubeconfigPath keeps the shoot kubeconfig the agent reads through
	// the seed, so that it reaches the shoot when the seed is gone.
	ShootKubeconfigPath = Dir + "/shoot.kubeconfig"
	// UpdatePublicKeyPath holds the operator's Ed25519 public key that agent
	// releases are signed with, when the extension turns the self-update on.
	UpdatePublicKeyPath = Dir + "/update-key.pem"
)

// BinaryPath is where the firewall image must put the agent binary: the
// boot unit the extension's Ignition config enables runs it from there.
const BinaryPath = "/usr/local/bin/firewall-agent"

// Paths of the state the agent keeps on a firewall machine itself, readable
// by root only.
const (
	// StateDir holds the agent's state; it must survive a reboot.
	StateDir = "/var/lib/firewall-agent"
	// LastGoodRulesetPath keeps the last ruleset the kernel accepted, which
	// `firewall-agent boot` installs before the network comes up.
	LastGoodRulesetPath = StateDir + "/last-good-ruleset.json"
	// ReleaseDir is where a machine's userdata puts the agent release it
	// downloads onto a firewall image without the agent, until InstallUnit
	// has checked its signature and installed it at BinaryPath.
	ReleaseDir = StateDir + "/release"
)

// The systemd units of the agent on a firewall machine; the extension
// delivers them, and drop-ins for the image's own units, through the
// machine's userdata.
const (
	// BootUnit runs `firewall-agent boot` before the network comes up and
	// again after every reload of nftables.service.
	BootUnit = "firewall-agent-boot.service"
	// AgentUnit runs the agent, in the VRF of the machine's default route.
	AgentUnit = "firewall-agent.service"
	// InstallUnit installs a release the userdata downloaded (ReleaseDir).
	InstallUnit = "firewall-agent-install.service"
)

// Where metal-stack's installer leaves a machine's userdata (os-installer
// pkg/installer/os/common/process_userdata.go and api/v1/api.go): the boot
// step removes them, since the userdata carries the boot credential.
const (
	// IgnitionUserdataPath is the Ignition config the installer ran.
	IgnitionUserdataPath = "/config.ign"
	// MetalUserdataPath is the userdata as the metal-hammer hands it over.
	MetalUserdataPath = "/etc/metal/userdata"
	// MachineAllocationPath is the allocation the installer keeps, whose
	// field "userdata" is the userdata again.
	MachineAllocationPath = "/etc/metal/machine-allocation.yaml"
)
