package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterwideNetworkPolicyNamespace is the shoot namespace whose policies the
// firewall enforces; policies elsewhere are ignored.
const ClusterwideNetworkPolicyNamespace = "firewall"

// ClusterwideNetworkPolicy holds a shoot owner's egress and ingress rules for
// the traffic that crosses the firewall.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=cwnp
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`
type ClusterwideNetworkPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PolicySpec   `json:"spec,omitempty"`
	Status PolicyStatus `json:"status,omitempty"`
}

// PolicySpec is the rule set of one policy. The agent's static source uses the
// same schema.
type PolicySpec struct {
	// Description says what the policy is for.
	// +optional
	Description string `json:"description,omitempty"`
	// Egress allows connections from the internal prefixes to the listed
	// destinations.
	// +optional
	Egress []EgressRule `json:"egress,omitempty"`
	// Ingress allows connections from the listed sources to the internal
	// prefixes.
	// +optional
	Ingress []IngressRule `json:"ingress,omitempty"`
}

// EgressRule allows traffic to the blocks in To on Ports.
type EgressRule struct {
	// To are the destinations.
	// +optional
	To []IPBlock `json:"to,omitempty"`
	// ToFQDNs is reserved for DNS-based rules; it is not enforced yet and
	// rejected when set.
	// +optional
	ToFQDNs []FQDNSelector `json:"toFQDNs,omitempty"`
	// Ports are the allowed destination ports; none means every port.
	// +optional
	Ports []PolicyPort `json:"ports,omitempty"`
}

// IngressRule allows traffic from the blocks in From on Ports.
type IngressRule struct {
	// From are the sources.
	// +optional
	From []IPBlock `json:"from,omitempty"`
	// Ports are the allowed destination ports; none means every port.
	// +optional
	Ports []PolicyPort `json:"ports,omitempty"`
}

// IPBlock is a CIDR minus the CIDRs in Except, which must lie inside it.
type IPBlock struct {
	// CIDR is an IPv4 or IPv6 network, e.g. 203.0.113.0/24.
	CIDR string `json:"cidr"`
	// Except are networks inside CIDR that are not matched.
	// +optional
	Except []string `json:"except,omitempty"`
}

// PolicyPort is a destination port or port range of one protocol.
type PolicyPort struct {
	// Protocol is TCP, UDP or SCTP; TCP when empty.
	// +optional
	Protocol string `json:"protocol,omitempty"`
	// Port is the port, 1-65535; every port of the protocol when empty.
	// +optional
	Port *int32 `json:"port,omitempty"`
	// EndPort makes Port..EndPort a range; it must not be below Port.
	// +optional
	EndPort *int32 `json:"endPort,omitempty"`
}

// FQDNSelector selects destinations by DNS name (reserved).
type FQDNSelector struct {
	// MatchName is an exact DNS name.
	// +optional
	MatchName string `json:"matchName,omitempty"`
	// MatchPattern is a DNS name with * wildcards.
	// +optional
	MatchPattern string `json:"matchPattern,omitempty"`
}

// PolicyState says whether the agent enforces a policy.
type PolicyState string

const (
	// PolicyStateDeployed means the policy is part of the applied ruleset.
	PolicyStateDeployed PolicyState = "Deployed"
	// PolicyStateIgnored means the policy is invalid and not enforced;
	// Message says why.
	PolicyStateIgnored PolicyState = "Ignored"
)

// PolicyStatus is written by the firewall agent.
type PolicyStatus struct {
	// State is Deployed or Ignored.
	// +optional
	State PolicyState `json:"state,omitempty"`
	// Message explains the state, e.g. which field is invalid.
	// +optional
	Message string `json:"message,omitempty"`
	// ObservedGeneration is the generation the state refers to.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ClusterwideNetworkPolicyList is a list of ClusterwideNetworkPolicies.
//
// +kubebuilder:object:root=true
type ClusterwideNetworkPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterwideNetworkPolicy `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &ClusterwideNetworkPolicy{}, &ClusterwideNetworkPolicyList{})
}
