package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FirewallExtensionConfig is the providerConfig of a shoot's `firewall`
// extension:
//
//	spec:
//	  extensions:
//	  - type: firewall
//	    providerConfig: {size: ..., image: ..., networks: [...], ...}
//
// It is decoded strictly: an unknown field is an error.
type FirewallExtensionConfig struct {
	// Size is the firewall machine's size.
	Size string `json:"size"`
	// Image is the firewall operating system image.
	Image string `json:"image"`
	// Partition is the metal partition the firewall is allocated in.
	Partition string `json:"partition"`
	// Project is the metal project that owns the firewall.
	Project string `json:"project"`
	// Networks are the metal networks the firewall is attached to besides
	// the node network, e.g. the internet.
	// +optional
	Networks []string `json:"networks,omitempty"`
	// NodeNetwork is the metal network of the shoot's nodes, the project's
	// private network. When unset, the extension finds it in the metal-api
	// as gardener-extension-provider-metal does: the project's network
	// whose prefix is the shoot's spec.networking.nodes.
	// +optional
	NodeNetwork string `json:"nodeNetwork,omitempty"`

	FirewallTrafficSpec `json:",inline"`

	// AgentVersion is a firewall-agent version, copied into the Firewall's
	// spec; an agent with self-update enabled switches to it.
	// +optional
	AgentVersion string `json:"agentVersion,omitempty"`
	// AgentURL is an http(s) URL of that agent's binary, copied into the
	// Firewall's spec; its signature is at AgentURL + ".sig".
	// +optional
	AgentURL string `json:"agentURL,omitempty"`
	// AgentSHA256 is the hex SHA-256 of the binary at AgentURL, copied into
	// the Firewall's spec.
	// +optional
	AgentSHA256 string `json:"agentSHA256,omitempty"`
	// AgentSHA512 is the hex SHA-512 of the binary at AgentURL, copied into
	// the Firewall's spec: with it, a new machine downloads that binary
	// through its userdata, for a firewall image without the agent.
	// +optional
	AgentSHA512 string `json:"agentSHA512,omitempty"`
	// Replicas is the number of firewalls in front of the shoot's networks,
	// 1 (default) to 4, each with its own machine and identity. All of them
	// forward and announce the shoot's routes; their distance orders them.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Strategy is RollingUpdate (default) or Recreate.
	// +optional
	Strategy UpdateStrategy `json:"strategy,omitempty"`
	// CreateTimeout is how long a new firewall may take until its agent
	// reports and it is Ready; past it, the firewall is replaced. Between 1m
	// and 24h; the operator's --create-timeout when unset.
	// +optional
	CreateTimeout *metav1.Duration `json:"createTimeout,omitempty"`
	// HealthTimeout is how long a firewall that had reported may stay not
	// Ready before it is replaced. Between 1m and 24h; the operator's
	// --health-timeout when unset.
	// +optional
	HealthTimeout *metav1.Duration `json:"healthTimeout,omitempty"`
	// DistanceTimeout is how long a rolling update waits, at each step, for
	// the firewalls to announce the distance it set before it goes on
	// without them. Between 1m and 24h; the operator's --distance-timeout
	// when unset.
	// +optional
	DistanceTimeout *metav1.Duration `json:"distanceTimeout,omitempty"`
	// DNS turns on the agent's DNS proxy, which enforces the policies'
	// toFQDNs: without it they allow nothing. It goes into the agent's
	// config, so a change rolls the firewall.
	// +optional
	DNS *DNSProxy `json:"dns,omitempty"`
	// LogAcceptedConnections also sends the first packet of every connection
	// the firewall accepts to the shoot's drop receiver (namespace firewall),
	// beside the drops, which are always sent. It goes into the agent's
	// config, so a change rolls the firewall.
	// +optional
	LogAcceptedConnections bool `json:"logAcceptedConnections,omitempty"`
	// Metrics serves the agent's metrics to the shoot's Prometheus on the
	// firewall's address in internalNetwork, one of networks. It goes into
	// the agent's config, so a change rolls the firewall.
	// +optional
	Metrics *AgentMetrics `json:"metrics,omitempty"`
	// Hibernation says what becomes of the firewall while the shoot
	// hibernates: release (default) or keep.
	// +optional
	Hibernation HibernationPolicy `json:"hibernation,omitempty"`
}

// HibernationPolicy is what becomes of a hibernated shoot's firewall.
type HibernationPolicy string

const (
	// HibernationRelease deletes the firewall while the shoot hibernates: its
	// machine goes back to the partition and its identity and credentials are
	// removed; waking up creates a new one, which forwards with the shoot's
	// rules before the shoot's nodes start. As gardener-extension-provider-metal does.
	HibernationRelease HibernationPolicy = "release"
	// HibernationKeep keeps the firewall running with its last rules, for
	// shoots whose networks serve more than the nodes or that wake up often.
	HibernationKeep HibernationPolicy = "keep"
)
