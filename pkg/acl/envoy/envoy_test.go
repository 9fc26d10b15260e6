package envoy

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	netrbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	networkinputsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
)

var always = prefixes("10.250.0.0/16", "100.64.0.0/12", "2001:db8:ffff::/48")

func allowPolicy(t *testing.T) ShootPolicy {
	p, errs := validation.Parse([]byte(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24","2001:db8::/32","10.250.1.0/24"]}}`), validation.Limits{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return NewShootPolicy("shoot--p--a", p, always)
}

func TestNewShootPolicyAllowAddsAlwaysAllowed(t *testing.T) {
	s := allowPolicy(t)
	got := strings.Join(Strings(s.Allowed), ",")
	// 10.250.1.0/24 is inside the always-allowed 10.250.0.0/16; 2001:db8:ffff::/48 inside 2001:db8::/32.
	want := "1.2.3.0/24,10.250.0.0/16,100.64.0.0/12,2001:db8::/32"
	if got != want {
		t.Fatalf("allowed %s, want %s", got, want)
	}
}

func TestNewShootPolicyDenyNeverDeniesAlwaysAllowed(t *testing.T) {
	p, _ := validation.Parse([]byte(`{"rule":{"action":"DENY","type":"source_ip","cidrs":["10.0.0.0/8","192.0.2.0/24"]}}`), validation.Limits{})
	s := NewShootPolicy("shoot--p--d", p, always)
	for _, d := range s.Denied {
		if d.Overlaps(netip.MustParsePrefix("10.250.0.0/16")) {
			t.Fatalf("denied %s overlaps an always-allowed CIDR", d)
		}
	}
	if !s.Restricts() || s.Type != "direct_remote_ip" {
		t.Fatalf("%+v", s)
	}
	p, _ = validation.Parse([]byte(`{"rule":{"action":"DENY","type":"remote_ip","cidrs":["10.250.3.0/24"]}}`), validation.Limits{})
	if NewShootPolicy("x", p, always).Restricts() {
		t.Fatal("a DENY of always-allowed CIDRs only must not restrict anything")
	}
}

func TestNetworkRBAC(t *testing.T) {
	cfg, err := NetworkRBAC(allowPolicy(t))
	if err != nil {
		t.Fatal(err)
	}
	pol := cfg.GetRules().GetPolicies()["shoot--p--a"]
	if cfg.GetRules().GetAction() != rbacv3.RBAC_ALLOW || len(pol.GetPrincipals()) != 4 {
		t.Fatalf("unexpected rules %v", cfg.GetRules())
	}
	if got := pol.GetPrincipals()[0].GetRemoteIp(); got.GetAddressPrefix() != "1.2.3.0" || got.GetPrefixLen().GetValue() != 24 {
		t.Fatalf("first principal %v", got)
	}
}

func TestShootEnvoyFilterRoundTrips(t *testing.T) {
	ef, err := ShootEnvoyFilter("istio-ingress", map[string]string{"istio": "ingressgateway"}, []string{"api.a.p.example.com", "api.a.p.internal.example.com"}, allowPolicy(t))
	if err != nil {
		t.Fatal(err)
	}
	if ef.Name != "acl-shoot--p--a" || len(ef.Spec.ConfigPatches) != 2 {
		t.Fatalf("unexpected %s with %d patches", ef.Name, len(ef.Spec.ConfigPatches))
	}
	p := ef.Spec.ConfigPatches[1]
	if p.ApplyTo != istioapinetworkingv1alpha3.EnvoyFilter_NETWORK_FILTER || p.Match.GetListener().GetName() != TLSListenerName ||
		p.Match.GetListener().GetFilterChain().GetSni() != "api.a.p.internal.example.com" || p.Patch.Operation != istioapinetworkingv1alpha3.EnvoyFilter_Patch_INSERT_FIRST {
		t.Fatalf("unexpected patch %v", p)
	}
	// What Istio receives parses back into a valid Envoy listener filter with the network RBAC config.
	data, err := protojson.Marshal(p.Patch.Value)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"remote_ip"`) || !strings.Contains(string(data), `"typed_config"`) {
		t.Fatalf("not in Envoy's snake_case: %s", data)
	}
	f := &listenerv3.Filter{}
	if err := protojson.Unmarshal(data, f); err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	rbac := &netrbacv3.RBAC{}
	if err := f.GetTypedConfig().UnmarshalTo(rbac); err != nil {
		t.Fatal(err)
	}
	if len(rbac.GetRules().GetPolicies()["shoot--p--a"].GetPrincipals()) != 4 {
		t.Fatalf("round trip lost principals: %v", rbac)
	}
}

func TestNothingToEnforceGivesNoFilter(t *testing.T) {
	ef, err := ShootEnvoyFilter("istio-ingress", nil, nil, allowPolicy(t))
	if err != nil || ef != nil {
		t.Fatalf("no hosts: got %v, %v", ef, err)
	}
}

func TestHTTPConnectEnvoyFilter(t *testing.T) {
	p, _ := validation.Parse([]byte(`{"rule":{"action":"DENY","type":"remote_ip","cidrs":["192.0.2.0/24"]}}`), validation.Limits{})
	shoots := []ShootPolicy{allowPolicy(t), NewShootPolicy("shoot--p--d", p, always)}
	ef, err := HTTPConnectEnvoyFilter("istio-ingress", map[string]string{"istio": "ingressgateway"}, shoots)
	if err != nil {
		t.Fatal(err)
	}
	if len(ef.Spec.ConfigPatches) != 3 {
		t.Fatalf("want HTTP filter on 8443 and 8132 and one extension config, got %d patches", len(ef.Spec.ConfigPatches))
	}
	for i, port := range []uint32{HTTPConnectPort, LegacyVPNPort} {
		cp := ef.Spec.ConfigPatches[i]
		if cp.Match.GetListener().GetPortNumber() != port || cp.Patch.Operation != istioapinetworkingv1alpha3.EnvoyFilter_Patch_INSERT_BEFORE {
			t.Fatalf("patch %d: %v", i, cp)
		}
		data, _ := protojson.Marshal(cp.Patch.Value)
		hf := &hcmv3.HttpFilter{}
		if err := protojson.Unmarshal(data, hf); err != nil {
			t.Fatal(err)
		}
		if hf.GetConfigDiscovery().GetConfigSource().GetAds() == nil || hf.Validate() != nil {
			t.Fatalf("HTTP filter does not use ECDS: %s", data)
		}
	}
	ext := ef.Spec.ConfigPatches[2]
	if ext.ApplyTo != istioapinetworkingv1alpha3.EnvoyFilter_EXTENSION_CONFIG {
		t.Fatalf("%v", ext)
	}
	data, _ := protojson.Marshal(ext.Patch.Value)
	tec := &corev3.TypedExtensionConfig{}
	if err := protojson.Unmarshal(data, tec); err != nil {
		t.Fatal(err)
	}
	rbac := &httprbacv3.RBAC{}
	if err := tec.GetTypedConfig().UnmarshalTo(rbac); err != nil {
		t.Fatal(err)
	}
	if rbac.GetRules() != nil || rbac.GetMatcher() == nil {
		t.Fatalf("want a matcher tree, got %v", rbac)
	}
	v := func(header, value, ip string) rbacv3.RBAC_Action {
		t.Helper()
		return decide(t, rbac.GetMatcher(), map[string]string{header: value}, netip.MustParseAddr(ip))
	}
	const dh = "X-Gardener-Destination"
	for _, tc := range []struct {
		header, value, ip string
		want              rbacv3.RBAC_Action
	}{
		{dh, "outbound|443||kube-apiserver.shoot--p--a.svc.cluster.local", "1.2.3.9", rbacv3.RBAC_ALLOW},
		{dh, "outbound|443||kube-apiserver.shoot--p--a.svc.cluster.local", "8.8.8.8", rbacv3.RBAC_DENY},
		{dh, "outbound|443||kube-apiserver.shoot--p--a.svc.cluster.local", "10.250.1.1", rbacv3.RBAC_ALLOW},
		{dh, "outbound|443||kube-apiserver.shoot--p--a.svc.cluster.local", "2001:db8::1", rbacv3.RBAC_ALLOW},
		{dh, "outbound|443||kube-apiserver.shoot--p--a.svc.cluster.local", "2001:db9::1", rbacv3.RBAC_DENY},
		{dh, "shoot--p--a--kube-apiserver-socket", "8.8.8.8", rbacv3.RBAC_DENY},
		{dh, "outbound|1194||vpn-seed-server-3.shoot--p--a.svc.cluster.local", "8.8.8.8", rbacv3.RBAC_DENY},
		{dh, "outbound|1194||vpn-seed-server.shoot--p--a.svc.cluster.local", "1.2.3.1", rbacv3.RBAC_ALLOW},
		{"reversed-vpn", "outbound|1194||vpn-seed-server.shoot--p--a.svc.cluster.local", "8.8.8.8", rbacv3.RBAC_DENY},
		{"reversed-vpn", "outbound|1194||vpn-seed-server.shoot--p--a.svc.cluster.local", "1.2.3.1", rbacv3.RBAC_ALLOW},
		{dh, "outbound|443||kube-apiserver.shoot--p--noacl.svc.cluster.local", "8.8.8.8", rbacv3.RBAC_ALLOW},
		{dh, "outbound|443||kube-apiserver.shoot--p--d.svc.cluster.local", "192.0.2.5", rbacv3.RBAC_DENY},
		{dh, "outbound|443||kube-apiserver.shoot--p--d.svc.cluster.local", "8.8.8.8", rbacv3.RBAC_ALLOW},
		{dh, "outbound|443||kube-apiserver.shoot--p--d.svc.cluster.local", "10.250.0.1", rbacv3.RBAC_ALLOW},
		{"other", "x", "8.8.8.8", rbacv3.RBAC_ALLOW},
	} {
		if got := v(tc.header, tc.value, tc.ip); got != tc.want {
			t.Errorf("%s=%s from %s: got %v, want %v", tc.header, tc.value, tc.ip, got, tc.want)
		}
	}
}

// decide evaluates the matcher shapes HTTPConnectMatcher builds, as Envoy does: a header input
// looked up in an exact-match map, a client address input matched by an IP trie, actions of type
// envoy.config.rbac.v3.Action, on_no_match when nothing matches.
func decide(t *testing.T, m *xdsmatcherv3.Matcher, headers map[string]string, ip netip.Addr) rbacv3.RBAC_Action {
	t.Helper()
	onMatch := func(om *xdsmatcherv3.Matcher_OnMatch) rbacv3.RBAC_Action {
		if om == nil {
			t.Fatal("no match and no on_no_match")
		}
		if next := om.GetMatcher(); next != nil {
			return decide(t, next, headers, ip)
		}
		a := &rbacv3.Action{}
		if err := om.GetAction().GetTypedConfig().UnmarshalTo(a); err != nil {
			t.Fatal(err)
		}
		return a.GetAction()
	}
	tree := m.GetMatcherTree()
	input, err := tree.GetInput().GetTypedConfig().UnmarshalNew()
	if err != nil {
		t.Fatal(err)
	}
	switch in := input.(type) {
	case *matcherv3.HttpRequestHeaderMatchInput:
		value, ok := headers[in.GetHeaderName()]
		if om, found := tree.GetExactMatchMap().GetMap()[value]; ok && found {
			return onMatch(om)
		}
	case *networkinputsv3.SourceIPInput, *networkinputsv3.DirectSourceIPInput:
		ipm := &xdsmatcherv3.IPMatcher{}
		if err := tree.GetCustomMatch().GetTypedConfig().UnmarshalTo(ipm); err != nil {
			t.Fatal(err)
		}
		for _, rm := range ipm.GetRangeMatchers() {
			for _, r := range rm.GetRanges() {
				p := netip.PrefixFrom(netip.MustParseAddr(r.GetAddressPrefix()), int(r.GetPrefixLen().GetValue()))
				if p.Contains(ip) {
					return onMatch(rm.GetOnMatch())
				}
			}
		}
	default:
		t.Fatalf("unexpected input %T", input)
	}
	return onMatch(m.GetOnNoMatch())
}

func TestHTTPConnectRBACWithoutShootsAllowsAll(t *testing.T) {
	cfg, err := HTTPConnectRBAC(nil)
	if err != nil || cfg.GetRules() != nil || cfg.GetMatcher() != nil {
		t.Fatalf("%v %v", cfg, err)
	}
}

func TestHTTPConnectRBACFallsBackToPoliciesBeyondTheBudget(t *testing.T) {
	var shoots []ShootPolicy
	for i := range 60 {
		shoots = append(shoots, NewShootPolicy(fmt.Sprintf("shoot--p--%d", i), &validation.Policy{Action: "ALLOW", Type: "remote_ip", CIDRs: manyCIDRs(100)}, always))
	}
	cfg, err := HTTPConnectRBAC(shoots)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetMatcher() != nil || len(cfg.GetRules().GetPolicies()) != 60 || cfg.GetRules().GetAction() != rbacv3.RBAC_DENY {
		t.Fatalf("want the policy form for 60 shoots with 100 CIDRs each")
	}
	if size := proto.Size(cfg); size > MatcherBudgetBytes {
		t.Fatalf("the compact form is %d bytes", size)
	}
	p := cfg.GetRules().GetPolicies()["shoot--p--7"]
	if p.GetPrincipals()[0].GetNotId() == nil {
		t.Fatalf("an ALLOW shoot's policy must deny clients not listed: %v", p)
	}
	pj, _ := protojson.Marshal(p.GetPermissions()[0])
	for _, want := range []string{"X-Gardener-Destination", ".shoot--p--7.svc.cluster.local", "shoot--p--7--kube-apiserver-socket", "reversed-vpn"} {
		if !strings.Contains(string(pj), want) {
			t.Errorf("permission %s lacks %q", pj, want)
		}
	}
}
