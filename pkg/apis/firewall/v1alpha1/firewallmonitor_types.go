package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FirewallMonitorNamespace is the shoot namespace the agent writes its monitor into.
const FirewallMonitorNamespace = "firewall"

// FirewallMonitor shows a shoot's owner the firewall in front of the shoot.
// The agent writes it into the shoot, so it is visible without seed access.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=fwmon
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Machine",type=string,JSONPath=`.spec.machineID`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.status.agentVersion`
// +kubebuilder:printcolumn:name="Heartbeat",type=date,JSONPath=`.status.lastHeartbeat`
type FirewallMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FirewallMonitorSpec   `json:"spec"`
	Status FirewallMonitorStatus `json:"status,omitempty"`
}

// FirewallMonitorSpec identifies the firewall machine.
type FirewallMonitorSpec struct {
	// MachineID is the provider's ID of the machine.
	// +optional
	MachineID string `json:"machineID,omitempty"`
	// Size is the machine size.
	// +optional
	Size string `json:"size,omitempty"`
	// Image is the firewall operating system image.
	// +optional
	Image string `json:"image,omitempty"`
	// Partition is the metal partition.
	// +optional
	Partition string `json:"partition,omitempty"`
	// Project is the metal project.
	// +optional
	Project string `json:"project,omitempty"`
	// Networks are the metal networks the machine is attached to.
	// +optional
	Networks []string `json:"networks,omitempty"`
}

// FirewallMonitorStatus is the agent's heartbeat and its counters.
type FirewallMonitorStatus struct {
	// AgentVersion is the agent's version.
	// +optional
	AgentVersion string `json:"agentVersion,omitempty"`
	// LastHeartbeat is when the agent last wrote this status.
	// +optional
	LastHeartbeat *metav1.Time `json:"lastHeartbeat,omitempty"`
	// Message is the agent's last error, empty when the last run succeeded.
	// +optional
	Message string `json:"message,omitempty"`
	// Counters are the packet and byte counters of the firewall's rules.
	// +optional
	Counters []RuleCounter `json:"counters,omitempty"`
	// Traffic is what crossed the firewall's interfaces, by side: internal is
	// the interface of the agent config's metrics.internalNetwork, external
	// every other device. Empty without metrics.internalNetwork.
	// +optional
	Traffic *TrafficStatistics `json:"traffic,omitempty"`
	// Devices are the counters of the firewall's interfaces: those of the
	// agent config's networks, or all but the loopback when it has none.
	// +optional
	Devices []DeviceStatistics `json:"devices,omitempty"`
	// MetricsAddress is where the agent serves its metrics to the shoot
	// (address:port), empty when it does not.
	// +optional
	MetricsAddress string `json:"metricsAddress,omitempty"`
	// DistanceSupported tells that the firewall announces its distance to
	// the fabric, and Distance is the one in force (see the Firewall's
	// status.agentStatus).
	// +optional
	DistanceSupported bool `json:"distanceSupported,omitempty"`
	// +optional
	Distance *int32 `json:"distance,omitempty"`
	// Conditions are Ready, SeedConnected and ShootConnected.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RuleCounter is the counter of one rule of the agent's ruleset.
type RuleCounter struct {
	// Name is the rule's ID in the ruleset, e.g. "egress-exact-v4", "drop" or
	// "ratelimit:eth1"; rules that share an ID (the shards) count together.
	Name string `json:"name"`
	// Packets is the number of packets the rule matched.
	Packets uint64 `json:"packets"`
	// Bytes is the number of bytes the rule matched.
	Bytes uint64 `json:"bytes"`
}

// FirewallMonitorList is a list of FirewallMonitors.
//
// +kubebuilder:object:root=true
type FirewallMonitorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FirewallMonitor `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &FirewallMonitor{}, &FirewallMonitorList{})
}
