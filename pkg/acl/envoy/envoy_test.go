package envoy

import (
	"fmt"
	"net/netip"
	"strings"

	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	netrbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy/envoytest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
)

var always = []netip.Prefix{netip.MustParsePrefix("10.250.0.0/16"), netip.MustParsePrefix("100.64.0.0/12"), netip.MustParsePrefix("2001:db8:ffff::/48")}

func allowPolicy() ShootPolicy {
	GinkgoHelper()
	p, errs := validation.Parse([]byte(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24","2001:db8::/32","10.250.1.0/24"]}}`), validation.Limits{})
	Expect(errs).To(BeEmpty())
	return NewShootPolicy("shoot--p--a", p, always)
}

var _ = Describe("NewShootPolicy", func() {
	It("adds the always-allowed CIDRs to an ALLOW", func() {
		s := allowPolicy()
		// 10.250.1.0/24 is inside the always-allowed 10.250.0.0/16; 2001:db8:ffff::/48 inside 2001:db8::/32.
		Expect(strings.Join(Strings(s.Allowed), ",")).To(Equal("1.2.3.0/24,10.250.0.0/16,100.64.0.0/12,2001:db8::/32"))
	})

	It("never denies an always-allowed CIDR", func() {
		p, _ := validation.Parse([]byte(`{"rule":{"action":"DENY","type":"source_ip","cidrs":["10.0.0.0/8","192.0.2.0/24"]}}`), validation.Limits{})
		s := NewShootPolicy("shoot--p--d", p, always)
		for _, d := range s.Denied {
			Expect(d.Overlaps(netip.MustParsePrefix("10.250.0.0/16"))).To(BeFalse(), "denied %s overlaps an always-allowed CIDR", d)
		}
		Expect(s.Restricts()).To(BeTrue(), "%+v", s)
		Expect(s.Type).To(Equal("direct_remote_ip"), "%+v", s)
		p, _ = validation.Parse([]byte(`{"rule":{"action":"DENY","type":"remote_ip","cidrs":["10.250.3.0/24"]}}`), validation.Limits{})
		Expect(NewShootPolicy("x", p, always).Restricts()).To(BeFalse(), "a DENY of always-allowed CIDRs only must not restrict anything")
	})
})

var _ = Describe("NetworkRBAC", func() {
	It("allows the shoot's CIDRs as principals", func() {
		cfg, err := NetworkRBAC(allowPolicy())
		Expect(err).NotTo(HaveOccurred())
		pol := cfg.GetRules().GetPolicies()["shoot--p--a"]
		Expect(cfg.GetRules().GetAction()).To(Equal(rbacv3.RBAC_ALLOW), "unexpected rules %v", cfg.GetRules())
		Expect(pol.GetPrincipals()).To(HaveLen(4), "unexpected rules %v", cfg.GetRules())
		got := pol.GetPrincipals()[0].GetRemoteIp()
		Expect(got.GetAddressPrefix()).To(Equal("1.2.3.0"), "first principal %v", got)
		Expect(got.GetPrefixLen().GetValue()).To(BeEquivalentTo(24), "first principal %v", got)
	})
})

var _ = Describe("ShootEnvoyFilter", func() {
	It("round-trips into a valid Envoy listener filter with the network RBAC config", func() {
		ef, err := ShootEnvoyFilter("istio-ingress", map[string]string{"istio": "ingressgateway"}, []string{"api.a.p.example.com", "api.a.p.internal.example.com"}, allowPolicy())
		Expect(err).NotTo(HaveOccurred())
		Expect(ef.Name).To(Equal("acl-shoot--p--a"))
		Expect(ef.Spec.ConfigPatches).To(HaveLen(2))
		p := ef.Spec.ConfigPatches[1]
		Expect(p.ApplyTo).To(Equal(istioapinetworkingv1alpha3.EnvoyFilter_NETWORK_FILTER), "unexpected patch %v", p)
		Expect(p.Match.GetListener().GetName()).To(Equal(TLSListenerName), "unexpected patch %v", p)
		Expect(p.Match.GetListener().GetFilterChain().GetSni()).To(Equal("api.a.p.internal.example.com"), "unexpected patch %v", p)
		Expect(p.Patch.Operation).To(Equal(istioapinetworkingv1alpha3.EnvoyFilter_Patch_INSERT_FIRST), "unexpected patch %v", p)

		By("parsing what Istio receives back as Envoy does")
		data, err := protojson.Marshal(p.Patch.Value)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(And(ContainSubstring(`"remote_ip"`), ContainSubstring(`"typed_config"`)), "not in Envoy's snake_case")
		f := &listenerv3.Filter{}
		Expect(protojson.Unmarshal(data, f)).To(Succeed())
		Expect(f.Validate()).To(Succeed())
		rbac := &netrbacv3.RBAC{}
		Expect(f.GetTypedConfig().UnmarshalTo(rbac)).To(Succeed())
		Expect(rbac.GetRules().GetPolicies()["shoot--p--a"].GetPrincipals()).To(HaveLen(4), "round trip lost principals: %v", rbac)
	})

	It("gives no filter when there is nothing to enforce", func() {
		ef, err := ShootEnvoyFilter("istio-ingress", nil, nil, allowPolicy())
		Expect(err).NotTo(HaveOccurred())
		Expect(ef).To(BeNil())
	})
})

var _ = Describe("HTTPConnectEnvoyFilter", func() {
	It("puts an ECDS HTTP filter on both ports whose matcher decides per shoot and client address", func() {
		p, _ := validation.Parse([]byte(`{"rule":{"action":"DENY","type":"remote_ip","cidrs":["192.0.2.0/24"]}}`), validation.Limits{})
		shoots := []ShootPolicy{allowPolicy(), NewShootPolicy("shoot--p--d", p, always)}
		ef, err := HTTPConnectEnvoyFilter("istio-ingress", map[string]string{"istio": "ingressgateway"}, shoots)
		Expect(err).NotTo(HaveOccurred())
		Expect(ef.Spec.ConfigPatches).To(HaveLen(3), "want HTTP filter on 8443 and 8132 and one extension config")
		for i, port := range []uint32{HTTPConnectPort, LegacyVPNPort} {
			cp := ef.Spec.ConfigPatches[i]
			Expect(cp.Match.GetListener().GetPortNumber()).To(Equal(port), "patch %d: %v", i, cp)
			Expect(cp.Patch.Operation).To(Equal(istioapinetworkingv1alpha3.EnvoyFilter_Patch_INSERT_BEFORE), "patch %d: %v", i, cp)
			data, _ := protojson.Marshal(cp.Patch.Value)
			hf := &hcmv3.HttpFilter{}
			Expect(protojson.Unmarshal(data, hf)).To(Succeed())
			Expect(hf.GetConfigDiscovery().GetConfigSource().GetAds()).NotTo(BeNil(), "HTTP filter does not use ECDS: %s", data)
			Expect(hf.Validate()).To(Succeed(), "HTTP filter does not use ECDS: %s", data)
		}
		ext := ef.Spec.ConfigPatches[2]
		Expect(ext.ApplyTo).To(Equal(istioapinetworkingv1alpha3.EnvoyFilter_EXTENSION_CONFIG), "%v", ext)
		data, _ := protojson.Marshal(ext.Patch.Value)
		tec := &corev3.TypedExtensionConfig{}
		Expect(protojson.Unmarshal(data, tec)).To(Succeed())
		rbac := &httprbacv3.RBAC{}
		Expect(tec.GetTypedConfig().UnmarshalTo(rbac)).To(Succeed())
		Expect(rbac.GetRules()).To(BeNil(), "want a matcher tree, got %v", rbac)
		Expect(rbac.GetMatcher()).NotTo(BeNil(), "want a matcher tree, got %v", rbac)

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
			got := decide(rbac.GetMatcher(), map[string]string{tc.header: tc.value}, netip.MustParseAddr(tc.ip))
			Expect(got).To(Equal(tc.want), "%s=%s from %s", tc.header, tc.value, tc.ip)
		}
	})
})

// decide evaluates the matcher as Envoy does (envoytest.Decide).
func decide(m *xdsmatcherv3.Matcher, headers map[string]string, ip netip.Addr) rbacv3.RBAC_Action {
	GinkgoHelper()
	a, err := envoytest.Decide(m, envoytest.Request{Headers: headers, Client: ip})
	Expect(err).NotTo(HaveOccurred())
	return a
}

var _ = Describe("HTTPConnectRBAC", func() {
	It("allows everything without shoots", func() {
		cfg, err := HTTPConnectRBAC(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.GetRules()).To(BeNil(), "%v", cfg)
		Expect(cfg.GetMatcher()).To(BeNil(), "%v", cfg)
	})

	It("falls back to policies beyond the matcher's budget", func() {
		var shoots []ShootPolicy
		for i := range 60 {
			shoots = append(shoots, NewShootPolicy(fmt.Sprintf("shoot--p--%d", i), &validation.Policy{Action: "ALLOW", Type: "remote_ip", CIDRs: manyCIDRs(100)}, always))
		}
		cfg, err := HTTPConnectRBAC(shoots)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.GetMatcher()).To(BeNil(), "want the policy form for 60 shoots with 100 CIDRs each")
		Expect(cfg.GetRules().GetPolicies()).To(HaveLen(60), "want the policy form for 60 shoots with 100 CIDRs each")
		Expect(cfg.GetRules().GetAction()).To(Equal(rbacv3.RBAC_DENY), "want the policy form for 60 shoots with 100 CIDRs each")
		Expect(proto.Size(cfg)).To(BeNumerically("<=", MatcherBudgetBytes), "the compact form")
		p := cfg.GetRules().GetPolicies()["shoot--p--7"]
		Expect(p.GetPrincipals()[0].GetNotId()).NotTo(BeNil(), "an ALLOW shoot's policy must deny clients not listed: %v", p)
		pj, _ := protojson.Marshal(p.GetPermissions()[0])
		for _, want := range []string{"X-Gardener-Destination", ".shoot--p--7.svc.cluster.local", "shoot--p--7--kube-apiserver-socket", "reversed-vpn"} {
			Expect(string(pj)).To(ContainSubstring(want), "permission lacks %q", want)
		}
	})
})
