// Package envoytest evaluates the Envoy RBAC configs this extension builds, as Envoy decides on
// them, for tests: here no Envoy binary runs, and no importable Envoy RBAC engine exists (grpc-go's
// is internal). It knows the shapes the extension builds and fails on any other shape rather than
// guess.
package envoytest

import (
	"fmt"
	"net/netip"
	"strings"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	netrbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	networkinputsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Request is what the RBAC filters see of a request: its headers and the client address. Direct
// and remote address are the same here (no XFF, no PROXY protocol).
type Request struct {
	Headers map[string]string
	Client  netip.Addr
}

// Allowed tells whether Envoy lets the request through an HTTP RBAC filter with this config.
func Allowed(cfg *httprbacv3.RBAC, req Request) (bool, error) {
	if m := cfg.GetMatcher(); m != nil {
		a, err := Decide(m, req)
		return a == rbacv3.RBAC_ALLOW, err
	}
	return rulesAllow(cfg.GetRules(), req)
}

// NetworkAllowed tells whether Envoy lets a connection from client through a network RBAC filter.
func NetworkAllowed(cfg *netrbacv3.RBAC, client netip.Addr) (bool, error) {
	if cfg.GetMatcher() != nil {
		return false, fmt.Errorf("network RBAC matchers are not built by this extension")
	}
	return rulesAllow(cfg.GetRules(), Request{Client: client})
}

// rulesAllow evaluates the policy form: ALLOW lets through what a policy matches, DENY refuses
// it; no rules at all allow everything.
func rulesAllow(rules *rbacv3.RBAC, req Request) (bool, error) {
	if rules == nil {
		return true, nil
	}
	matched := false
	for _, p := range rules.GetPolicies() {
		m, err := policyMatches(p, req)
		if err != nil {
			return false, err
		}
		matched = matched || m
	}
	switch rules.GetAction() {
	case rbacv3.RBAC_ALLOW:
		return matched, nil
	case rbacv3.RBAC_DENY:
		return !matched, nil
	default:
		return false, fmt.Errorf("unexpected RBAC action %v", rules.GetAction())
	}
}

func policyMatches(p *rbacv3.Policy, req Request) (bool, error) {
	perm := false
	for _, pm := range p.GetPermissions() {
		m, err := permissionMatches(pm, req)
		if err != nil {
			return false, err
		}
		perm = perm || m
	}
	if !perm {
		return false, nil
	}
	for _, pr := range p.GetPrincipals() {
		m, err := principalMatches(pr, req)
		if err != nil || m {
			return m, err
		}
	}
	return false, nil
}

func permissionMatches(p *rbacv3.Permission, req Request) (bool, error) {
	switch r := p.GetRule().(type) {
	case *rbacv3.Permission_Any:
		return r.Any, nil
	case *rbacv3.Permission_OrRules:
		for _, sub := range r.OrRules.GetRules() {
			m, err := permissionMatches(sub, req)
			if err != nil || m {
				return m, err
			}
		}
		return false, nil
	case *rbacv3.Permission_Header:
		return headerMatches(r.Header, req.Headers)
	default:
		return false, fmt.Errorf("unexpected permission %T", r)
	}
}

func principalMatches(p *rbacv3.Principal, req Request) (bool, error) {
	switch id := p.GetIdentifier().(type) {
	case *rbacv3.Principal_Any:
		return id.Any, nil
	case *rbacv3.Principal_RemoteIp:
		return cidrContains(id.RemoteIp, req.Client)
	case *rbacv3.Principal_DirectRemoteIp:
		return cidrContains(id.DirectRemoteIp, req.Client)
	case *rbacv3.Principal_OrIds:
		for _, sub := range id.OrIds.GetIds() {
			m, err := principalMatches(sub, req)
			if err != nil || m {
				return m, err
			}
		}
		return false, nil
	case *rbacv3.Principal_NotId:
		m, err := principalMatches(id.NotId, req)
		return !m, err
	default:
		return false, fmt.Errorf("unexpected principal %T", id)
	}
}

func cidrContains(c *corev3.CidrRange, ip netip.Addr) (bool, error) {
	addr, err := netip.ParseAddr(c.GetAddressPrefix())
	if err != nil {
		return false, err
	}
	p, err := addr.Prefix(int(c.GetPrefixLen().GetValue()))
	if err != nil {
		return false, err
	}
	return p.Contains(ip), nil
}

func headerMatches(h *routev3.HeaderMatcher, headers map[string]string) (bool, error) {
	v, ok := lookup(headers, h.GetName())
	if !ok {
		return false, nil
	}
	sm := h.GetStringMatch()
	switch m := sm.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact:
		return v == m.Exact, nil
	case *matcherv3.StringMatcher_Suffix:
		return strings.HasSuffix(v, m.Suffix), nil
	case *matcherv3.StringMatcher_Prefix:
		return strings.HasPrefix(v, m.Prefix), nil
	default:
		return false, fmt.Errorf("unexpected string matcher %T", m)
	}
}

// lookup reads a header as Envoy does: names are case-insensitive.
func lookup(headers map[string]string, name string) (string, bool) {
	for k, v := range headers {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// Decide evaluates the matcher shapes the extension builds, as Envoy does: a header input looked
// up in an exact-match map or a longest-prefix map, a client address input matched by an IP trie,
// actions of type envoy.config.rbac.v3.Action, on_no_match when nothing matches.
func Decide(m *xdsmatcherv3.Matcher, req Request) (rbacv3.RBAC_Action, error) {
	om, err := Select(m, req)
	if err != nil {
		return 0, err
	}
	a := &rbacv3.Action{}
	if err := om.GetTypedConfig().UnmarshalTo(a); err != nil {
		return 0, fmt.Errorf("action %q is not an RBAC action: %w", om.GetName(), err)
	}
	return a.GetAction(), nil
}

// Select walks a matcher to the action that applies to the request, whatever its type (an RBAC
// action, or the composite filter's ExecuteFilterAction); nil when nothing matches and no
// on_no_match is set.
func Select(m *xdsmatcherv3.Matcher, req Request) (*xdscorev3.TypedExtensionConfig, error) {
	onMatch := func(om *xdsmatcherv3.Matcher_OnMatch) (*xdscorev3.TypedExtensionConfig, error) {
		if om == nil {
			return nil, nil
		}
		if next := om.GetMatcher(); next != nil {
			return Select(next, req)
		}
		return om.GetAction(), nil
	}
	tree := m.GetMatcherTree()
	if tree == nil {
		return nil, fmt.Errorf("unexpected matcher %T", m.GetMatcherType())
	}
	input, err := tree.GetInput().GetTypedConfig().UnmarshalNew()
	if err != nil {
		return nil, err
	}
	switch in := input.(type) {
	case *matcherv3.HttpRequestHeaderMatchInput:
		value, ok := lookup(req.Headers, in.GetHeaderName())
		if !ok {
			break
		}
		if exact := tree.GetExactMatchMap(); exact != nil {
			if om, found := exact.GetMap()[value]; found {
				return onMatch(om)
			}
		} else if prefix := tree.GetPrefixMatchMap(); prefix != nil {
			longest := ""
			var best *xdsmatcherv3.Matcher_OnMatch
			for k, om := range prefix.GetMap() {
				if strings.HasPrefix(value, k) && (best == nil || len(k) > len(longest)) {
					longest, best = k, om
				}
			}
			if best != nil {
				return onMatch(best)
			}
		} else {
			return nil, fmt.Errorf("unexpected tree type %T", tree.GetTreeType())
		}
	case *networkinputsv3.SourceIPInput, *networkinputsv3.DirectSourceIPInput:
		ipm := &xdsmatcherv3.IPMatcher{}
		if err := tree.GetCustomMatch().GetTypedConfig().UnmarshalTo(ipm); err != nil {
			return nil, err
		}
		for _, rm := range ipm.GetRangeMatchers() {
			for _, r := range rm.GetRanges() {
				addr, err := netip.ParseAddr(r.GetAddressPrefix())
				if err != nil {
					return nil, err
				}
				p, err := addr.Prefix(int(r.GetPrefixLen().GetValue()))
				if err != nil {
					return nil, err
				}
				if p.Contains(req.Client) {
					return onMatch(rm.GetOnMatch())
				}
			}
		}
	default:
		return nil, fmt.Errorf("unexpected input %T", input)
	}
	return onMatch(m.GetOnNoMatch())
}

// UnmarshalAny unpacks an Any into a new message of type T.
func UnmarshalAny[T proto.Message](a *anypb.Any, msg T) (T, error) {
	if err := a.UnmarshalTo(msg); err != nil {
		return msg, fmt.Errorf("unpacking %s: %w", a.GetTypeUrl(), err)
	}
	return msg, nil
}
