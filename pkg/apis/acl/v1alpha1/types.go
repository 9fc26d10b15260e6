package v1alpha1

// GroupName is the API group of the acl providerConfig and providerStatus.
const GroupName = "acl.metal-firewall.io"

// SchemeGroupVersion names this version; apiVersion may be omitted in a providerConfig.
const SchemeGroupVersion = GroupName + "/v1alpha1"

// Actions of a rule. Matching is case-insensitive.
const (
	// ActionAllow lets only the listed CIDRs (and the always-allowed ones) reach the kube-apiserver.
	ActionAllow = "ALLOW"
	// ActionDeny keeps the listed CIDRs out, except the always-allowed ones.
	ActionDeny = "DENY"
)

// Types of a rule: which address of the client is matched. Matching is case-insensitive.
const (
	// TypeRemoteIP matches the client's original address: after PROXY protocol and, on
	// the HTTP listeners, X-Forwarded-For as far as the gateway trusts it (Envoy's remote_ip).
	TypeRemoteIP = "remote_ip"
	// TypeDirectRemoteIP matches the address of the TCP peer of the gateway (Envoy's direct_remote_ip).
	TypeDirectRemoteIP = "direct_remote_ip"
	// TypeSourceIP is Envoy's deprecated name of direct_remote_ip; it is accepted and enforced as direct_remote_ip.
	TypeSourceIP = "source_ip"
)

// ExtensionConfig is the providerConfig of an Extension of type `acl`.
type ExtensionConfig struct {
	// APIVersion is optional; if set it must be acl.metal-firewall.io/v1alpha1.
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind is optional; if set it must be ExtensionConfig.
	Kind string `json:"kind,omitempty"`
	// Rule is the access rule for the shoot's kube-apiserver.
	Rule *Rule `json:"rule"`
}

// Rule restricts who may reach the shoot's kube-apiserver.
type Rule struct {
	// Action is ALLOW or DENY (case-insensitive).
	Action string `json:"action"`
	// Type is remote_ip, direct_remote_ip or source_ip (an alias of direct_remote_ip).
	Type string `json:"type"`
	// Cidrs are IPv4 or IPv6 prefixes. Host bits are allowed and cleared (1.2.3.4/24 means 1.2.3.0/24).
	Cidrs []string `json:"cidrs"`
}

// ExtensionStatus is the providerStatus of an Extension of type `acl`: what is enforced.
type ExtensionStatus struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Action and Type are the normalised rule (upper-case action, Envoy principal type).
	Action string `json:"action"`
	Type   string `json:"type"`
	// RuleCIDRs are the shoot owner's CIDRs, normalised to their networks.
	RuleCIDRs []string `json:"ruleCIDRs"`
	// AlwaysAllowedCIDRs can never be locked out: seed nodes and pods, shoot nodes,
	// the shoot's egress CIDRs and the operator's CIDRs.
	AlwaysAllowedCIDRs []string `json:"alwaysAllowedCIDRs"`
	// AllowedCIDRs is set for ALLOW: the clients that may connect (rule + always allowed).
	AllowedCIDRs []string `json:"allowedCIDRs,omitempty"`
	// DeniedCIDRs is set for DENY: the clients that are refused (rule minus always allowed).
	DeniedCIDRs []string `json:"deniedCIDRs,omitempty"`
	// IngressNamespaces are the Istio ingress namespaces the policy is deployed to.
	IngressNamespaces []string `json:"ingressNamespaces,omitempty"`
	// Hosts are the kube-apiserver host names (SNI) the policy applies to.
	Hosts []string `json:"hosts,omitempty"`
	// Selectors are the ingress gateways' workload selectors per ingress namespace.
	Selectors map[string]map[string]string `json:"selectors,omitempty"`
}
