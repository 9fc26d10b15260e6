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
	// ToFQDNs are destinations by DNS name: the addresses the firewall's DNS
	// proxy saw in the answers for a matching name, for as long as the
	// answer's TTL (with the agent's floor and grace period). A rule may have
	// both To and ToFQDNs: it allows either.
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

// FQDNSelector selects destinations by DNS name, with the field names and
// the meaning of metal-stack's firewall-controller. Exactly one of MatchName
// and MatchPattern is set. Both compare without regard to case, with or
// without a trailing dot.
type FQDNSelector struct {
	// MatchName is an exact DNS name, e.g. api.github.com.
	// +optional
	MatchName string `json:"matchName,omitempty"`
	// MatchPattern is a DNS name in which each * matches any run of
	// letters, digits, '-', '_' and '.' (so it may span labels, as in the
	// firewall-controller), e.g. *.s3.example.com. A lone * matches every
	// name.
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
	// FQDNs are the policy's FQDN selectors (the first 64) with the
	// addresses the firewall allows for them now, or why it does not.
	// +optional
	FQDNs []FQDNSelectorStatus `json:"fqdns,omitempty"`
}

// Bounds of a policy's FQDN status, which keep it a few KB.
const (
	// MaxStatusFQDNs is the most selectors a policy's status lists.
	MaxStatusFQDNs = 64
	// MaxStatusAddresses is the most addresses listed per selector.
	MaxStatusAddresses = 16
)

// FQDNSelectorStatus is what the firewall enforces for one FQDN selector.
type FQDNSelectorStatus struct {
	// MatchName is the selector's matchName.
	// +optional
	MatchName string `json:"matchName,omitempty"`
	// MatchPattern is the selector's matchPattern.
	// +optional
	MatchPattern string `json:"matchPattern,omitempty"`
	// Enforced tells whether the DNS proxy opens the addresses of the
	// answers that match the selector.
	Enforced bool `json:"enforced"`
	// Addresses are addresses allowed now (the first 16, sorted).
	// +optional
	Addresses []string `json:"addresses,omitempty"`
	// AddressCount is how many addresses are allowed now, listed or not.
	// +optional
	AddressCount int32 `json:"addressCount,omitempty"`
	// Message says why the selector is not enforced, or which bound it hit.
	// +optional
	Message string `json:"message,omitempty"`
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
