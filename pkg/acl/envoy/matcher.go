package envoy

import (
	"fmt"
	"net/netip"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	networkinputsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/v1alpha1"
)

// vpnSeedServerReplicas is how many vpn-seed-server-<n> destinations a highly available shoot has.
const vpnSeedServerReplicas = 5

// Destinations are the exact values of X-Gardener-Destination (and of the legacy reversed-vpn
// header) that address the shoot: its kube-apiserver, its socket (apiserver-proxy) and its VPN
// seed servers, as Gardener's http-proxy route accepts them.
func Destinations(namespace string) []string {
	out := []string{
		fmt.Sprintf("outbound|443||kube-apiserver.%s.%s", namespace, clusterDomain),
		namespace + "--kube-apiserver-socket",
		fmt.Sprintf("outbound|1194||vpn-seed-server.%s.%s", namespace, clusterDomain),
	}
	for i := range vpnSeedServerReplicas {
		out = append(out, fmt.Sprintf("outbound|1194||vpn-seed-server-%d.%s.%s", i, namespace, clusterDomain))
	}
	return out
}

// HTTPConnectMatcher is the RBAC decision of an HTTP-CONNECT listener as a matcher tree: an
// exact-match map from the destination header to the shoot's IP trie, so the cost of a request
// does not grow with the number of shoots. Requests for shoots without ACL match no entry and are
// allowed. The tree reads the one header the listener routes by (DestinationHeader on 8443,
// LegacyDestinationHeader on 8132): deciding on another header than the route's would let a
// client pass with a shoot it may reach and be routed to another.
func HTTPConnectMatcher(shoots []ShootPolicy, header string) (*xdsmatcherv3.Matcher, error) {
	allow, err := rbacAction("allow", rbacv3.RBAC_ALLOW)
	if err != nil {
		return nil, err
	}
	entries := map[string]*xdsmatcherv3.Matcher_OnMatch{}
	for _, s := range shoots {
		if !s.Restricts() {
			continue
		}
		m, err := clientMatcher(s)
		if err != nil {
			return nil, err
		}
		for _, d := range Destinations(s.Namespace) {
			entries[d] = &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Matcher{Matcher: m}}
		}
	}
	input, err := typedConfig("destination", &matcherv3.HttpRequestHeaderMatchInput{HeaderName: header})
	if err != nil {
		return nil, err
	}
	matcher := &xdsmatcherv3.Matcher{
		MatcherType: &xdsmatcherv3.Matcher_MatcherTree_{MatcherTree: &xdsmatcherv3.Matcher_MatcherTree{
			Input:    input,
			TreeType: &xdsmatcherv3.Matcher_MatcherTree_ExactMatchMap{ExactMatchMap: &xdsmatcherv3.Matcher_MatcherTree_MatchMap{Map: entries}},
		}},
		OnNoMatch: &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Action{Action: allow}},
	}
	if err := matcher.Validate(); err != nil {
		return nil, err
	}
	return matcher, nil
}

// clientMatcher decides on the client address with an IP trie: ALLOW rules allow the listed
// prefixes and deny the rest, DENY rules deny the listed prefixes and allow the rest.
func clientMatcher(s ShootPolicy) (*xdsmatcherv3.Matcher, error) {
	var input proto.Message = &networkinputsv3.SourceIPInput{}
	if s.Type == v1alpha1.TypeDirectRemoteIP {
		input = &networkinputsv3.DirectSourceIPInput{}
	}
	in, err := typedConfig("client-address", input)
	if err != nil {
		return nil, err
	}
	listed, rest, prefixes := rbacv3.RBAC_ALLOW, rbacv3.RBAC_DENY, s.Allowed
	if s.Action == v1alpha1.ActionDeny {
		listed, rest, prefixes = rbacv3.RBAC_DENY, rbacv3.RBAC_ALLOW, s.Denied
	}
	onListed, err := rbacAction(s.Namespace+"-listed", listed)
	if err != nil {
		return nil, err
	}
	onRest, err := rbacAction(s.Namespace+"-not-listed", rest)
	if err != nil {
		return nil, err
	}
	trie, err := typedConfig("envoy.matching.custom_matchers.trie_matcher", &xdsmatcherv3.IPMatcher{
		RangeMatchers: []*xdsmatcherv3.IPMatcher_IPRangeMatcher{{
			Ranges:  xdsCIDRs(prefixes),
			OnMatch: &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Action{Action: onListed}},
		}},
	})
	if err != nil {
		return nil, err
	}
	return &xdsmatcherv3.Matcher{
		MatcherType: &xdsmatcherv3.Matcher_MatcherTree_{MatcherTree: &xdsmatcherv3.Matcher_MatcherTree{
			Input:    in,
			TreeType: &xdsmatcherv3.Matcher_MatcherTree_CustomMatch{CustomMatch: trie},
		}},
		OnNoMatch: &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Action{Action: onRest}},
	}, nil
}

func xdsCIDRs(ps []netip.Prefix) []*xdscorev3.CidrRange {
	out := make([]*xdscorev3.CidrRange, 0, len(ps))
	for _, p := range ps {
		out = append(out, &xdscorev3.CidrRange{AddressPrefix: p.Addr().String(), PrefixLen: wrapperspb.UInt32(prefixLen(p))})
	}
	return out
}

func rbacAction(name string, action rbacv3.RBAC_Action) (*xdscorev3.TypedExtensionConfig, error) {
	return typedConfig("action", &rbacv3.Action{Name: name, Action: action})
}

func typedConfig(name string, m proto.Message) (*xdscorev3.TypedExtensionConfig, error) {
	if v, ok := m.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, err
		}
	}
	a, err := anypb.New(m)
	if err != nil {
		return nil, err
	}
	return &xdscorev3.TypedExtensionConfig{Name: name, TypedConfig: a}, nil
}
