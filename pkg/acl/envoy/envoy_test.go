package envoy

import (
	"fmt"
	"net/netip"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	matchingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/matching/v3"
	compositev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/composite/v3"
	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	netrbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy/envoytest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
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
		Expect(strings.Join(cidr.Strings(s.Allowed), ",")).To(Equal("1.2.3.0/24,10.250.0.0/16,100.64.0.0/12,2001:db8::/32"))
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
		// Per host: remove the filter from the host's chain, then insert it first (once per chain,
		// however Istio groups the hosts into chains).
		Expect(ef.Spec.ConfigPatches).To(HaveLen(4))
		for i, cp := range ef.Spec.ConfigPatches {
			Expect(IsInjected(cp)).To(BeTrue(), "patch %d: %v", i, cp)
		}
		rm := ef.Spec.ConfigPatches[2]
		Expect(rm.Patch.Operation).To(Equal(istioapinetworkingv1alpha3.EnvoyFilter_Patch_REMOVE), "unexpected patch %v", rm)
		Expect(rm.Match.GetListener().GetFilterChain().GetSni()).To(Equal("api.a.p.internal.example.com"), "unexpected patch %v", rm)
		Expect(rm.Match.GetListener().GetFilterChain().GetFilter().GetName()).To(Equal(NetworkFilterName), "unexpected patch %v", rm)
		p := ef.Spec.ConfigPatches[3]
		Expect(p.ApplyTo).To(Equal(istioapinetworkingv1alpha3.EnvoyFilter_NETWORK_FILTER), "unexpected patch %v", p)
		Expect(p.Match.GetListener().GetFilterChain().GetFilter()).To(BeNil(), "the insertion matches the chain, not a filter: %v", p)
		Expect(p.Match.GetListener().GetPortNumber()).To(Equal(uint32(TLSListenerPort)), "unexpected patch %v", p)
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
	It("puts an ECDS HTTP filter on both ports whose dispatch and shard configs decide per shoot and client address", func() {
		p, _ := validation.Parse([]byte(`{"rule":{"action":"DENY","type":"remote_ip","cidrs":["192.0.2.0/24"]}}`), validation.Limits{})
		shoots := []ShootPolicy{allowPolicy(), NewShootPolicy("shoot--p--d", p, always)}
		shards, err := Shards(shoots, ShardBudgetBytes)
		Expect(err).NotTo(HaveOccurred())
		Expect(shards).To(HaveLen(1), "two shoots fit one shard")
		ef, err := HTTPConnectEnvoyFilter("istio-ingress", map[string]string{"istio": "ingressgateway"}, shards, HTTPConnectListeners)
		Expect(err).NotTo(HaveOccurred())
		Expect(ef.Spec.ConfigPatches).To(HaveLen(4), "want an HTTP filter and its dispatch config for 8443 and for 8132")
		configs := map[string]*corev3.TypedExtensionConfig{}
		for i, port := range []uint32{HTTPConnectPort, LegacyVPNPort} {
			cp := ef.Spec.ConfigPatches[2*i]
			Expect(cp.Match.GetListener().GetPortNumber()).To(Equal(port), "patch %d: %v", i, cp)
			Expect(cp.Patch.Operation).To(Equal(istioapinetworkingv1alpha3.EnvoyFilter_Patch_INSERT_BEFORE), "patch %d: %v", i, cp)
			data, _ := protojson.Marshal(cp.Patch.Value)
			hf := &hcmv3.HttpFilter{}
			Expect(protojson.Unmarshal(data, hf)).To(Succeed())
			Expect(hf.GetConfigDiscovery().GetConfigSource().GetAds()).NotTo(BeNil(), "HTTP filter does not use ECDS: %s", data)
			Expect(hf.Validate()).To(Succeed(), "HTTP filter does not use ECDS: %s", data)
			Expect(hf.GetName()).To(Equal(HTTPConnectListeners[i].FilterName))
			ext := ef.Spec.ConfigPatches[2*i+1]
			Expect(ext.ApplyTo).To(Equal(istioapinetworkingv1alpha3.EnvoyFilter_EXTENSION_CONFIG), "%v", ext)
			tec := extensionConfigOf(ext.Patch.Value)
			Expect(tec.GetName()).To(Equal(hf.GetName()), "the filter's config is served under its name")
			configs[tec.GetName()] = tec
		}
		shard, err := ShardEnvoyFilter("istio-ingress", nil, shards[0], HTTPConnectListeners)
		Expect(err).NotTo(HaveOccurred())
		Expect(shard.Spec.ConfigPatches).To(HaveLen(2), "one RBAC config per port")
		for _, cp := range shard.Spec.ConfigPatches {
			tec := extensionConfigOf(cp.Patch.Value)
			rbac := &httprbacv3.RBAC{}
			Expect(tec.GetTypedConfig().UnmarshalTo(rbac)).To(Succeed())
			Expect(rbac.GetRules()).To(BeNil(), "want a matcher tree, got %v", rbac)
			Expect(rbac.GetMatcher()).NotTo(BeNil(), "want a matcher tree, got %v", rbac)
			configs[tec.GetName()] = tec
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
			// Each header is the one its port routes by.
			l := HTTPConnectListeners[0]
			if tc.header == "reversed-vpn" {
				l = HTTPConnectListeners[1]
			}
			got := decideListener(configs, l, map[string]string{tc.header: tc.value}, netip.MustParseAddr(tc.ip))
			Expect(got).To(Equal(tc.want), "%s=%s from %s", tc.header, tc.value, tc.ip)
		}

		By("deciding on the header the port routes by, never on the other one")
		// On 8132 the route follows Reversed-VPN: a destination header naming a shoot the client
		// may reach must not let it through to another shoot.
		req := map[string]string{dh: "outbound|443||kube-apiserver.shoot--p--a.svc.cluster.local", "Reversed-VPN": "outbound|1194||vpn-seed-server.shoot--p--d.svc.cluster.local"}
		Expect(decideListener(configs, HTTPConnectListeners[1], req, netip.MustParseAddr("192.0.2.5"))).To(Equal(rbacv3.RBAC_DENY))
		req = map[string]string{dh: "outbound|443||kube-apiserver.shoot--p--d.svc.cluster.local", "Reversed-VPN": "outbound|1194||vpn-seed-server.shoot--p--a.svc.cluster.local"}
		Expect(decideListener(configs, HTTPConnectListeners[1], req, netip.MustParseAddr("8.8.8.8"))).To(Equal(rbacv3.RBAC_DENY))
	})
})

func extensionConfigOf(v *structpb.Struct) *corev3.TypedExtensionConfig {
	GinkgoHelper()
	data, err := protojson.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	tec := &corev3.TypedExtensionConfig{}
	Expect(protojson.Unmarshal(data, tec)).To(Succeed())
	return tec
}

// decideListener evaluates a request on a listener as Envoy would with the served configs: the
// listener's config (a dispatch, or an RBAC config), and the shard's RBAC config it selects.
func decideListener(configs map[string]*corev3.TypedExtensionConfig, l HTTPConnectListener, headers map[string]string, ip netip.Addr) rbacv3.RBAC_Action {
	GinkgoHelper()
	root := configs[l.FilterName]
	Expect(root).NotTo(BeNil(), "no config %s", l.FilterName)
	inner, err := root.GetTypedConfig().UnmarshalNew()
	Expect(err).NotTo(HaveOccurred())
	rbac, ok := inner.(*httprbacv3.RBAC)
	if !ok {
		ewm := inner.(*matchingv3.ExtensionWithMatcher)
		action, err := envoytest.Select(ewm.GetXdsMatcher(), envoytest.Request{Headers: headers, Client: ip})
		Expect(err).NotTo(HaveOccurred())
		if action == nil {
			return rbacv3.RBAC_ALLOW
		}
		exec := &compositev3.ExecuteFilterAction{}
		Expect(action.GetTypedConfig().UnmarshalTo(exec)).To(Succeed())
		shard := configs[exec.GetDynamicConfig().GetName()]
		Expect(shard).NotTo(BeNil(), "no shard config %s", exec.GetDynamicConfig().GetName())
		rbac = &httprbacv3.RBAC{}
		Expect(shard.GetTypedConfig().UnmarshalTo(rbac)).To(Succeed())
	}
	allowed, err := envoytest.Allowed(rbac, envoytest.Request{Headers: headers, Client: ip})
	Expect(err).NotTo(HaveOccurred())
	if allowed {
		return rbacv3.RBAC_ALLOW
	}
	return rbacv3.RBAC_DENY
}

var _ = Describe("HTTPConnectRBAC", func() {
	It("allows everything without shoots", func() {
		cfg, err := HTTPConnectRBAC(nil, DestinationHeader)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.GetRules()).To(BeNil(), "%v", cfg)
		Expect(cfg.GetMatcher()).To(BeNil(), "%v", cfg)
	})

	It("falls back to policies beyond the matcher's budget", func() {
		var shoots []ShootPolicy
		for i := range 60 {
			shoots = append(shoots, NewShootPolicy(fmt.Sprintf("shoot--p--%d", i), &validation.Policy{Action: "ALLOW", Type: "remote_ip", CIDRs: manyCIDRs(100)}, always))
		}
		cfg, err := HTTPConnectRBAC(shoots, DestinationHeader)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.GetMatcher()).To(BeNil(), "want the policy form for 60 shoots with 100 CIDRs each")
		Expect(cfg.GetRules().GetPolicies()).To(HaveLen(60), "want the policy form for 60 shoots with 100 CIDRs each")
		Expect(cfg.GetRules().GetAction()).To(Equal(rbacv3.RBAC_DENY), "want the policy form for 60 shoots with 100 CIDRs each")
		Expect(proto.Size(cfg)).To(BeNumerically("<=", MatcherBudgetBytes), "the compact form")
		p := cfg.GetRules().GetPolicies()["shoot--p--7"]
		Expect(p.GetPrincipals()[0].GetNotId()).NotTo(BeNil(), "an ALLOW shoot's policy must deny clients not listed: %v", p)
		pj, _ := protojson.Marshal(p.GetPermissions()[0])
		for _, want := range []string{"X-Gardener-Destination", ".shoot--p--7.svc.cluster.local", "shoot--p--7--kube-apiserver-socket"} {
			Expect(string(pj)).To(ContainSubstring(want), "permission lacks %q", want)
		}
	})
})

var _ = Describe("GatewayListeners", func() {
	ports := func(ls []HTTPConnectListener) []uint32 {
		var out []uint32
		for _, l := range ls {
			out = append(out, l.Port)
		}
		return out
	}

	It("patches the legacy VPN port only where a Service still targets it (gardenlet's RemoveHTTPProxyLegacyPort)", func() {
		Expect(ports(GatewayListeners([]int32{9443, 8443, 8132}))).To(Equal([]uint32{HTTPConnectPort, LegacyVPNPort}))
		Expect(ports(GatewayListeners([]int32{9443, 8443}))).To(Equal([]uint32{HTTPConnectPort}))
	})

	It("patches both without a Service to read", func() {
		Expect(ports(GatewayListeners(nil))).To(Equal([]uint32{HTTPConnectPort, LegacyVPNPort}))
	})
})
