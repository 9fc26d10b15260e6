package envoy

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	netrbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	"google.golang.org/protobuf/encoding/protojson"
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
	if rbac.GetRules().GetAction() != rbacv3.RBAC_DENY || len(rbac.GetRules().GetPolicies()) != 2 {
		t.Fatalf("unexpected %v", rbac)
	}
	allow := rbac.GetRules().GetPolicies()["shoot--p--a"]
	if allow.GetPrincipals()[0].GetNotId() == nil {
		t.Fatalf("ALLOW shoot must be denied for clients NOT in the list: %v", allow)
	}
	var perm map[string]any
	pj, _ := protojson.Marshal(allow.GetPermissions()[0])
	_ = json.Unmarshal(pj, &perm)
	for _, want := range []string{"X-Gardener-Destination", ".shoot--p--a.svc.cluster.local", "shoot--p--a--kube-apiserver-socket", "reversed-vpn"} {
		if !strings.Contains(string(pj), want) {
			t.Errorf("permission %s lacks %q", pj, want)
		}
	}
}

func TestHTTPConnectRBACWithoutShootsAllowsAll(t *testing.T) {
	cfg, err := HTTPConnectRBAC(nil)
	if err != nil || cfg.GetRules() != nil {
		t.Fatalf("%v %v", cfg, err)
	}
}
