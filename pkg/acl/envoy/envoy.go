// Package envoy builds the Envoy configuration that enforces a shoot's ACL on
// the seed's Istio ingress gateway, from go-control-plane's typed protos. Every
// message is checked with its own Validate() before it is rendered into the
// JSON value of an Istio EnvoyFilter patch.
//
// Two places are patched:
//
//   - The TLS listener (port 9443) has one filter chain per kube-apiserver
//     host (SNI). A per-shoot EnvoyFilter inserts a network RBAC filter at the
//     front of exactly the shoot's filter chains. Other shoots' chains are not
//     touched, so a change drains only the shoot's own connections, and the
//     per-connection cost does not depend on the number of shoots.
//   - The HTTP-CONNECT listeners (8443, the unified proxy of apiserver-proxy and
//     VPN, and the legacy VPN port 8132) are shared by all shoots. Each has one
//     ACL HTTP filter, whatever the number of shoots, configured through ECDS
//     (EXTENSION_CONFIG patches): an ACL change updates extension configs only,
//     the listener stays as it is and no tunnel of any shoot is reset. The
//     shoots' RBAC configs are sharded by namespace prefix (shards.go), each
//     shard an ECDS resource and an EnvoyFilter of its own; the filter's config
//     is a composite filter whose matcher picks the shard by a prefix lookup on
//     the destination header (dispatch.go): one RBAC evaluation per request.
package envoy

import (
	"fmt"
	"net/netip"
	"sort"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matchingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/matching/v3"
	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	netrbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

const (
	// TLSListenerPort is the istio ingress gateway's port for the kube-apiservers (SNI, 443 -> 9443).
	// Istio names its listener 0.0.0.0_9443 on IPv4, ::_9443 on an IPv6-only gateway: the patches
	// match the port, so that every one of them carries the ACL.
	TLSListenerPort = 9443
	// HTTPConnectPort is the unified HTTP-CONNECT proxy port (apiserver-proxy and VPN).
	HTTPConnectPort = 8443
	// LegacyVPNPort is the reversed VPN's legacy HTTP-CONNECT port.
	LegacyVPNPort = 8132
	// DestinationHeader names the upstream cluster of a CONNECT request on port 8443.
	DestinationHeader = "X-Gardener-Destination"
	// LegacyDestinationHeader names the upstream cluster of a CONNECT request on port 8132.
	LegacyDestinationHeader = "reversed-vpn"

	// NetworkFilterName is the name of the injected network RBAC filter; it marks what this extension added.
	NetworkFilterName = "acl-metal-firewall-rbac"
	// HTTPFilterName is the name of the ACL HTTP filter on the HTTP-CONNECT port (8443) and of its
	// ECDS extension config; the shards' configs are named after it (ShardConfigName).
	HTTPFilterName = "acl-metal-firewall-http-connect"
	// LegacyHTTPFilterName is the ACL HTTP filter on the legacy VPN port (8132).
	LegacyHTTPFilterName = "acl-metal-firewall-reversed-vpn"

	hcmFilterName    = "envoy.filters.network.http_connection_manager"
	routerFilterName = "envoy.filters.http.router"
	clusterDomain    = "svc.cluster.local"
)

// ShootPolicy is what is enforced for one shoot.
type ShootPolicy struct {
	// Namespace is the shoot's namespace in the seed, e.g. shoot--project--name.
	Namespace string
	// Action is ALLOW or DENY; Type is remote_ip or direct_remote_ip.
	Action, Type string
	// Allowed are the clients that may connect (ALLOW: rule + always allowed).
	Allowed []netip.Prefix
	// Denied are the clients that are refused (DENY: rule minus always allowed).
	Denied []netip.Prefix
}

// NewShootPolicy combines the shoot owner's rule with the always-allowed CIDRs.
func NewShootPolicy(namespace string, p *validation.Policy, alwaysAllowed []netip.Prefix) ShootPolicy {
	s := ShootPolicy{Namespace: namespace, Action: p.Action, Type: p.Type}
	if p.Action == v1alpha1.ActionDeny {
		s.Denied = cidr.Subtract(p.CIDRs, alwaysAllowed)
	} else {
		s.Allowed = cidr.Merge(p.CIDRs, alwaysAllowed)
	}
	return s
}

// Restricts tells whether the policy refuses anyone; a DENY rule whose CIDRs are all always allowed does not.
func (s ShootPolicy) Restricts() bool {
	return s.Action != v1alpha1.ActionDeny || len(s.Denied) > 0
}

func ipPrincipal(typ string, p netip.Prefix) *rbacv3.Principal {
	cidr := &corev3.CidrRange{AddressPrefix: p.Addr().String(), PrefixLen: wrapperspb.UInt32(prefixLen(p))}
	if typ == v1alpha1.TypeDirectRemoteIP {
		return &rbacv3.Principal{Identifier: &rbacv3.Principal_DirectRemoteIp{DirectRemoteIp: cidr}}
	}
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_RemoteIp{RemoteIp: cidr}}
}

func ipPrincipals(typ string, ps []netip.Prefix) []*rbacv3.Principal {
	out := make([]*rbacv3.Principal, 0, len(ps))
	for _, p := range ps {
		out = append(out, ipPrincipal(typ, p))
	}
	return out
}

// clientPolicy is the RBAC policy "any permission, from these clients".
func (s ShootPolicy) rules() *rbacv3.RBAC {
	if s.Action == v1alpha1.ActionDeny {
		return &rbacv3.RBAC{Action: rbacv3.RBAC_DENY, Policies: map[string]*rbacv3.Policy{s.Namespace: {
			Permissions: []*rbacv3.Permission{{Rule: &rbacv3.Permission_Any{Any: true}}},
			Principals:  ipPrincipals(s.Type, s.Denied),
		}}}
	}
	return &rbacv3.RBAC{Action: rbacv3.RBAC_ALLOW, Policies: map[string]*rbacv3.Policy{s.Namespace: {
		Permissions: []*rbacv3.Permission{{Rule: &rbacv3.Permission_Any{Any: true}}},
		Principals:  ipPrincipals(s.Type, s.Allowed),
	}}}
}

// NetworkRBAC is the network RBAC filter config for the shoot's TLS filter chains.
func NetworkRBAC(s ShootPolicy) (*netrbacv3.RBAC, error) {
	cfg := &netrbacv3.RBAC{StatPrefix: "acl." + s.Namespace + ".", Rules: s.rules()}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("network RBAC for %s: %w", s.Namespace, err)
	}
	return cfg, nil
}

// MatcherBudgetBytes bounds the size of the matcher-tree form of one HTTP-CONNECT RBAC config.
// The tree repeats a shoot's CIDRs for each of its destinations. Beyond the budget the compact
// policy-list form is used. Shards (ShardBudgetBytes) stay below it.
const MatcherBudgetBytes = 512 << 10

// HTTPConnectRBAC is the HTTP RBAC config of an HTTP-CONNECT listener for the given shoots,
// deciding on header (see HTTPConnectMatcher). Requests for shoots without ACL pass. It decides
// with a matcher tree: one map lookup on the destination header and one IP trie lookup per
// request, whatever the number of shoots. If that form exceeds MatcherBudgetBytes, it falls back
// to one DENY policy per shoot ("destination is this shoot and the client is not allowed"),
// 8-16 times smaller but evaluated shoot by shoot.
func HTTPConnectRBAC(shoots []ShootPolicy, header string) (*httprbacv3.RBAC, error) {
	return httpConnectRBAC(shoots, header, MatcherBudgetBytes)
}

func httpConnectRBAC(shoots []ShootPolicy, header string, matcherBudget int) (*httprbacv3.RBAC, error) {
	cfg := &httprbacv3.RBAC{RulesStatPrefix: "acl_http_connect."}
	restricted := false
	for _, s := range shoots {
		restricted = restricted || s.Restricts()
	}
	if restricted {
		m, err := HTTPConnectMatcher(shoots, header)
		if err != nil {
			return nil, err
		}
		if proto.Size(m) <= matcherBudget {
			cfg.Matcher = m
		} else {
			cfg.Rules = httpConnectPolicies(shoots, header)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("HTTP RBAC for the HTTP-CONNECT listeners: %w", err)
	}
	return cfg, nil
}

// httpConnectPolicies is the compact form: one DENY policy per restricted shoot.
func httpConnectPolicies(shoots []ShootPolicy, header string) *rbacv3.RBAC {
	policies := map[string]*rbacv3.Policy{}
	for _, s := range shoots {
		if !s.Restricts() {
			continue
		}
		var principal *rbacv3.Principal
		if s.Action == v1alpha1.ActionDeny {
			principal = orIDs(ipPrincipals(s.Type, s.Denied))
		} else {
			principal = &rbacv3.Principal{Identifier: &rbacv3.Principal_NotId{NotId: orIDs(ipPrincipals(s.Type, s.Allowed))}}
		}
		// Permissions are evaluated before principals: a request for another shoot costs a few
		// header comparisons here, never the CIDR list.
		policies[s.Namespace] = &rbacv3.Policy{
			Permissions: []*rbacv3.Permission{destinationPermission(s.Namespace, header)},
			Principals:  []*rbacv3.Principal{principal},
		}
	}
	return &rbacv3.RBAC{Action: rbacv3.RBAC_DENY, Policies: policies}
}

// destinationPermission matches requests whose destination header names one of the shoot's Destinations.
func destinationPermission(namespace, header string) *rbacv3.Permission {
	rules := []*rbacv3.Permission{
		headerPermission(header, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: "." + namespace + "." + clusterDomain}}),
		headerPermission(header, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: namespace + "--kube-apiserver-socket"}}),
	}
	return &rbacv3.Permission{Rule: &rbacv3.Permission_OrRules{OrRules: &rbacv3.Permission_Set{Rules: rules}}}
}

func headerPermission(name string, m *matcherv3.StringMatcher) *rbacv3.Permission {
	return &rbacv3.Permission{Rule: &rbacv3.Permission_Header{Header: &routev3.HeaderMatcher{
		Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: m},
	}}}
}

func orIDs(ids []*rbacv3.Principal) *rbacv3.Principal {
	if len(ids) == 1 {
		return ids[0]
	}
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_OrIds{OrIds: &rbacv3.Principal_Set{Ids: ids}}}
}

// NetworkFilter is the listener filter entry (name + typed_config) for the shoot's TLS filter chains.
func NetworkFilter(s ShootPolicy) (*listenerv3.Filter, error) {
	cfg, err := NetworkRBAC(s)
	if err != nil {
		return nil, err
	}
	a, err := anypb.New(cfg)
	if err != nil {
		return nil, err
	}
	f := &listenerv3.Filter{Name: NetworkFilterName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: a}}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// HTTPConnectFilter is the HTTP filter entry of one HTTP-CONNECT listener: it takes its config
// from ECDS (the listener's FilterName: a dispatch to the shards, or an RBAC config) and, until
// that arrives, allows everything (fail open: the gateway must never wait for this extension's
// config to serve other traffic).
func HTTPConnectFilter(l HTTPConnectListener) (*hcmv3.HttpFilter, error) {
	def, err := anypb.New(&httprbacv3.RBAC{})
	if err != nil {
		return nil, err
	}
	f := &hcmv3.HttpFilter{Name: l.FilterName, ConfigType: &hcmv3.HttpFilter_ConfigDiscovery{ConfigDiscovery: &corev3.ExtensionConfigSource{
		ConfigSource:                     adsSource(),
		DefaultConfig:                    def,
		ApplyDefaultConfigWithoutWarming: true,
		TypeUrls:                         []string{typeURL(&matchingv3.ExtensionWithMatcher{}), typeURL(&httprbacv3.RBAC{})},
	}}}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}

func adsSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
}

func typeURL(m proto.Message) string {
	return "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName())
}

// ToStruct renders a validated proto message as the struct an EnvoyFilter patch value holds,
// with Envoy's field names (snake_case) as Gardener's own EnvoyFilters use them.
func ToStruct(m proto.Message) (*structpb.Struct, error) {
	if v, ok := m.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, err
		}
	}
	data, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(data, s); err != nil {
		return nil, err
	}
	return s, nil
}

// SortedNamespaces returns the namespaces of the policies, sorted.
func SortedNamespaces(shoots []ShootPolicy) []string {
	var out []string
	for _, s := range shoots {
		out = append(out, s.Namespace)
	}
	sort.Strings(out)
	return out
}

// prefixLen is the prefix length of a valid prefix, 0 to 128.
func prefixLen(p netip.Prefix) uint32 {
	return uint32(max(p.Bits(), 0)) //nolint:gosec // Bits of a valid prefix is 0..128
}
