package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SelfUpdate turns on the agent's self-update (MEP-16's
// controllers.firewall.selfUpdate): the agent switches to the agent version
// its firewall controller's source names (the Firewall's agentVersion,
// agentURL and agentSHA256 from the seed; sources.static.agent), once the
// download matches the digest and carries a valid signature of the
// operator's key.
type SelfUpdate struct {
	// Enabled turns the self-update on.
	Enabled bool `json:"enabled"`
	// PublicKeyFile is the operator's Ed25519 public key (PEM, "PUBLIC KEY",
	// as `openssl pkey -pubout` writes it) that releases are signed with.
	// The --update-public-key flag overrides it. Without a key the
	// self-update stays off and says so.
	PublicKeyFile string `json:"publicKeyFile,omitempty"`
	// AllowDowngrade lets the agent switch to a lower semantic version.
	AllowDowngrade bool `json:"allowDowngrade,omitempty"`
	// HealthTimeout is how long a new version has to apply the ruleset once
	// before it is rolled back; 2m when unset, between 5s and 1h.
	HealthTimeout *metav1.Duration `json:"healthTimeout,omitempty"`
}

// AgentRelease names an agent version to run, with where to get it and its
// digest: what the Firewall's agentVersion, agentURL and agentSHA256 say.
type AgentRelease struct {
	// Version is the agent version, e.g. v1.2.3.
	Version string `json:"version"`
	// URL is the http(s) URL of the binary; its signature is at URL + ".sig".
	URL string `json:"url"`
	// SHA256 is the hex SHA-256 of the binary.
	SHA256 string `json:"sha256"`
}

// SelfUpdateStateFile is the self-update's state file (0600), in the
// agent's folder beside its config.
const SelfUpdateStateFile = "selfupdate-state.json"

// Bounds of selfUpdate.healthTimeout.
const (
	DefaultHealthTimeout = 2 * time.Minute
	MinHealthTimeout     = 5 * time.Second
	MaxHealthTimeout     = time.Hour
)
