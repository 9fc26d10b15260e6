package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Firewall is one firewall machine of a shoot, owned by a FirewallSet. It
// lives in the shoot's namespace in the seed.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=fw
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Machine",type=string,JSONPath=`.status.machineStatus.machineID`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.status.agentStatus.version`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Firewall struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FirewallSpec   `json:"spec"`
	Status FirewallStatus `json:"status,omitempty"`
}

// FirewallSpec describes the machine and what the agent on it enforces.
// Size, image, partition, project and networks are immutable parts of a
// machine: changing them in a deployment's template rolls a new set.
type FirewallSpec struct {
	// Size is the machine size.
	Size string `json:"size"`
	// Image is the firewall operating system image.
	Image string `json:"image"`
	// Partition is the metal partition the machine is allocated in.
	Partition string `json:"partition"`
	// Project is the metal project that owns the machine.
	Project string `json:"project"`
	// Networks are the metal networks the machine is attached to.
	Networks []string `json:"networks"`

	FirewallTrafficSpec `json:",inline"`

	// AgentVersion is the firewall-agent version the machine should run. An
	// agent with controllers.firewall.selfUpdate enabled downloads it from
	// AgentURL, verifies it against AgentSHA256 and the operator's signing
	// key, and switches to it (docs/operations/firewall/self-update.md).
	// +optional
	AgentVersion string `json:"agentVersion,omitempty"`
	// AgentURL is an http(s) URL of that agent version's binary; its
	// signature is expected at AgentURL + ".sig".
	// +optional
	AgentURL string `json:"agentURL,omitempty"`
	// AgentSHA256 is the hex SHA-256 of the binary at AgentURL. The agent
	// refuses a download with another digest: the seed is the trusted place
	// for it, not the download server.
	// +optional
	AgentSHA256 string `json:"agentSHA256,omitempty"`
	// AgentSHA512 is the hex SHA-512 of the binary at AgentURL. With it (and
	// AgentVersion, AgentSHA256), a new machine's userdata downloads the
	// binary (Ignition checks the SHA-512), and the machine installs it once
	// the operator's signature checks out: for a firewall image without the
	// agent. Without it, the image must bring the agent.
	// +optional
	AgentSHA512 string `json:"agentSHA512,omitempty"`
	// SSHPublicKeys are authorized for the machine's admin user.
	// +optional
	SSHPublicKeys []string `json:"sshPublicKeys,omitempty"`
	// UserdataContents are the files written onto the machine at provisioning
	// time. Secret-backed contents are read when the machine is created, so no
	// credential is stored in the Firewall object itself.
	// +optional
	UserdataContents []UserdataContent `json:"userdataContents,omitempty"`
	// InitialRules are written into the machine's allocation in the metal-api
	// (its firewall_rules) when the machine is created, for an agent whose cwnp
	// controller reads them there (sources.metal); from then on they are
	// changed in the metal-api. Only what the metal-api can hold is accepted:
	// TCP or UDP, single ports, CIDRs without exceptions.
	// +optional
	InitialRules *PolicySpec `json:"initialRules,omitempty"`
	// Distance is how much longer than the shortest this firewall's route
	// announcements are (BGP AS-path prepends, 0 to 8): the router prefers
	// the firewall with the shortest. The FirewallSet sets it on each of its
	// Firewalls (see FirewallSetSpec.Distance); in a template it is ignored.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=8
	// +optional
	Distance int32 `json:"distance,omitempty"`
}

// UserdataContent is one file on the firewall machine.
type UserdataContent struct {
	// Path is the absolute path of the file on the machine.
	Path string `json:"path"`
	// Content is the file's content. Exactly one of content and secretRef is set.
	// +optional
	Content string `json:"content,omitempty"`
	// SecretRef names a key of a Secret in the Firewall's namespace that holds
	// the content.
	// +optional
	SecretRef *SecretKeyReference `json:"secretRef,omitempty"`
	// Mode is the file's permission bits, 0600 when unset.
	// +optional
	Mode *int32 `json:"mode,omitempty"`
}

// SecretKeyReference names one key of a Secret in the same namespace.
type SecretKeyReference struct {
	// Name is the Secret's name.
	Name string `json:"name"`
	// Key is the key within the Secret's data.
	Key string `json:"key"`
}

// FirewallPhase is the coarse life-cycle state of a Firewall.
type FirewallPhase string

const (
	// FirewallPhaseCreating means the machine is being allocated or has not reported yet.
	FirewallPhaseCreating FirewallPhase = "Creating"
	// FirewallPhaseRunning means the machine is provisioned and its agent reports.
	FirewallPhaseRunning FirewallPhase = "Running"
	// FirewallPhaseCrashing means the machine failed to provision or its agent stopped reporting.
	FirewallPhaseCrashing FirewallPhase = "Crashing"
	// FirewallPhaseDeleting means the machine is being released.
	FirewallPhaseDeleting FirewallPhase = "Deleting"
)

// FirewallStatus is what the manager and the agent report about a Firewall.
type FirewallStatus struct {
	// Phase is the coarse life-cycle state.
	// +optional
	Phase FirewallPhase `json:"phase,omitempty"`
	// Conditions are Created, Provisioned, Connected, SeedConnected and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// MachineStatus describes the machine behind the Firewall.
	// +optional
	MachineStatus *MachineStatus `json:"machineStatus,omitempty"`
	// AgentStatus is what the agent on the machine last reported.
	// +optional
	AgentStatus *AgentStatus `json:"agentStatus,omitempty"`
	// EgressIPs are the addresses the firewall's traffic leaves with: its
	// machine's addresses in external networks and the IPs of its SNAT rules.
	// The acl extension always allows them, so that a shoot's nodes, which
	// leave through this firewall, never lock themselves out.
	// +optional
	EgressIPs []string `json:"egressIPs,omitempty"`
	// ObservedGeneration is the generation the manager last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// MachineStatus identifies the machine behind a Firewall. The machine ID is
// how a Firewall finds its machine again after a restart or a migration.
type MachineStatus struct {
	// MachineID is the provider's ID of the machine.
	MachineID string `json:"machineID"`
	// AllocationTimestamp is when the machine was allocated.
	// +optional
	AllocationTimestamp *metav1.Time `json:"allocationTimestamp,omitempty"`
	// Message is the provider's last word on the machine.
	// +optional
	Message string `json:"message,omitempty"`
	// Liveliness is the metal-api's liveliness of the machine (Alive, Dead, Unknown).
	// +optional
	Liveliness string `json:"liveliness,omitempty"`
	// ImageID is the image the machine was allocated with.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// CrashLoop tells that the machine keeps failing to provision.
	// +optional
	CrashLoop bool `json:"crashLoop,omitempty"`
	// LastEvent is the machine's last provisioning event.
	// +optional
	LastEvent *MachineEvent `json:"lastEvent,omitempty"`
}

// MachineEvent is a provisioning event of a machine.
type MachineEvent struct {
	// Event is the event's name, e.g. "Phoned Home".
	Event string `json:"event"`
	// Timestamp is when the event was received.
	// +optional
	Timestamp *metav1.Time `json:"timestamp,omitempty"`
	// Message is the event's message.
	// +optional
	Message string `json:"message,omitempty"`
}

// AgentStatus is the agent's heartbeat.
type AgentStatus struct {
	// Version is the agent's version.
	// +optional
	Version string `json:"version,omitempty"`
	// LastRunAgainstSeed is the agent's last heartbeat: set each time it has
	// read its Firewall from the seed (every sync), whether or not the apply
	// that followed succeeded (see Message).
	// +optional
	LastRunAgainstSeed *metav1.Time `json:"lastRunAgainstSeed,omitempty"`
	// LastRunAgainstShoot is when the agent last applied rules it read from the shoot.
	// +optional
	LastRunAgainstShoot *metav1.Time `json:"lastRunAgainstShoot,omitempty"`
	// Message is the agent's last error, empty when the last run succeeded.
	// +optional
	Message string `json:"message,omitempty"`
	// AppliedGeneration is the metadata.generation of the Firewall whose
	// spec the agent has in force: applied without error, with every source
	// its config names answered. It lags behind the generation while a new
	// spec is not yet (or could not be) applied; the old rules stay in force
	// meanwhile.
	// +optional
	AppliedGeneration int64 `json:"appliedGeneration,omitempty"`
	// SelfUpdate is the state of the agent's self-update, when its config
	// has controllers.firewall.selfUpdate.
	// +optional
	SelfUpdate *SelfUpdateStatus `json:"selfUpdate,omitempty"`
	// DistanceSupported tells that the agent announces the Firewall's
	// distance to the fabric (its config has routing); the manager then waits
	// for Distance before it moves traffic onto or away from the firewall.
	// +optional
	DistanceSupported bool `json:"distanceSupported,omitempty"`
	// Distance is the distance the firewall announces (AS-path prepends in
	// force in its FRR), nil until one is. It lags behind spec.distance while
	// the new one is not (or cannot be) applied; Message then says why.
	// +optional
	Distance *int32 `json:"distance,omitempty"`
	// MetricsAddress is where the agent serves its metrics to the shoot
	// (host:port, its first address in metrics.internalNetwork), empty when
	// it serves none. The extension publishes it in the shoot as an
	// EndpointSlice of the Service firewall/firewall-agent-metrics; the
	// agent itself writes nothing there.
	// +optional
	MetricsAddress string `json:"metricsAddress,omitempty"`
}

// SelfUpdateStatus tells what the agent's self-update did with the wanted
// agent version.
type SelfUpdateStatus struct {
	// State is Disabled, UpToDate, Updating, Refused or RolledBack.
	State string `json:"state"`
	// WantedVersion is the agentVersion the agent was asked to run.
	// +optional
	WantedVersion string `json:"wantedVersion,omitempty"`
	// Message says why, for Disabled, Refused and RolledBack.
	// +optional
	Message string `json:"message,omitempty"`
}

// FirewallList is a list of Firewalls.
//
// +kubebuilder:object:root=true
type FirewallList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Firewall `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &Firewall{}, &FirewallList{})
}
