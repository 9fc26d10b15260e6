package istio_test

import (
	"bytes"
	"context"
	"net/netip"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy/envoytest"
)

// The seed of the conformance specs: five shoots on the three kinds of ingress gateway Gardener
// v1.150 deploys (default, zonal, exposure class), SNI passthrough and TLS termination (the
// webhook's path), one with an observability host, one without ACL.
func conformanceSeed(ctx context.Context) *seed {
	def, zonal, exposure := defaultGateways()
	shoots := []*shoot{
		{namespace: "shoot--p--a", hosts: []string{"api.a.p.example.com", "api.a.p.internal.example.com"}, gateway: def,
			observability: "gu-p--a." + seedIngressDomain,
			rule:          `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.0/24","2001:db8::/32"]}}`},
		{namespace: "shoot--p--b", hosts: []string{"api.b.p.example.com", "api.b.p.internal.example.com"}, gateway: def, tlsTermination: true,
			rule: `{"rule":{"action":"DENY","type":"remote_ip","cidrs":["192.0.2.128/25","10.250.7.0/24"]}}`},
		{namespace: "shoot--p--c", hosts: []string{"api.c.p.example.com"}, gateway: def},
		{namespace: "shoot--p--d", hosts: []string{"api.d.p.example.com"}, gateway: zonal, tlsTermination: true,
			rule: `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["9.9.9.0/24"]}}`},
		{namespace: "shoot--p--e", hosts: []string{"api.e.p.example.com"}, gateway: exposure,
			rule: `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["5.6.7.0/24","2001:db8:5::/48"]}}`},
	}
	s := newSeed(ctx, []*gateway{def, zonal, exposure}, shoots)
	s.reconcile(ctx)
	return s
}

// hostsOf are the SNI hosts whose filter chains belong to the shoot.
func hostsOf(sh *shoot) []string {
	hosts := append([]string{}, sh.hosts...)
	if sh.observability != "" {
		hosts = append(hosts, sh.observability)
	}
	return hosts
}

// decision is an expected outcome for a client address.
type decision struct {
	client  string
	allowed bool
}

// always are addresses in the always-allowed CIDRs: seed nodes and pods, shoot nodes (IPv4 and
// IPv6), shoot egress, the operator's.
var always = []string{"10.1.2.3", "10.2.0.9", "10.250.0.5", "2001:db8:250::1", "203.0.113.7", "192.0.2.1"}

func expectations(sh *shoot) []decision {
	var out []decision
	for _, a := range always {
		out = append(out, decision{a, true})
	}
	switch sh.namespace {
	case "shoot--p--a":
		out = append(out, decision{"1.2.3.9", true}, decision{"8.8.8.8", false}, decision{"2001:db8::1", true}, decision{"2001:db9::1", false})
	case "shoot--p--b":
		out = append(out, decision{"192.0.2.130", false}, decision{"8.8.8.8", true}, decision{"10.250.7.1", true}, decision{"2001:db9::1", true})
	case "shoot--p--c":
		out = append(out, decision{"8.8.8.8", true}, decision{"2001:db9::1", true})
	case "shoot--p--d":
		out = append(out, decision{"9.9.9.9", true}, decision{"8.8.8.8", false}, decision{"2001:db9::1", false})
	case "shoot--p--e":
		out = append(out, decision{"5.6.7.8", true}, decision{"2001:db8:5::1", true}, decision{"8.8.8.8", false}, decision{"2001:db8:6::1", false})
	}
	return out
}

var _ = Describe("The ACL on the listeners Istio generates from Gardener's objects", Ordered, func() {
	var (
		ctx = context.Background()
		s   *seed
		gen map[*gateway]*generated
	)

	BeforeAll(func() {
		s = conformanceSeed(ctx)
		gen = map[*gateway]*generated{}
		for _, gw := range s.gateways {
			gen[gw] = s.generate(ctx, gw)
		}
	})

	It("puts the network RBAC filter exactly once, first, into exactly the restricted shoot's filter chains", func() {
		for _, gw := range s.gateways {
			l := gen[gw].listener(9443)
			owner := map[string]*shoot{}
			for _, sh := range s.shoots {
				if sh.gateway == gw {
					for _, h := range hostsOf(sh) {
						owner[h] = sh
					}
				}
			}
			for _, fc := range l.GetFilterChains() {
				names := filterNames(fc)
				count := strings.Count(strings.Join(names, ","), envoy.NetworkFilterName)
				var sh *shoot
				for _, sni := range fc.GetFilterChainMatch().GetServerNames() {
					if o := owner[sni]; o != nil {
						Expect(sh == nil || sh == o).To(BeTrue(), "a filter chain serves two shoots: %v", fc.GetFilterChainMatch().GetServerNames())
						sh = o
					}
				}
				if sh == nil || sh.rule == "" {
					Expect(count).To(BeZero(), "%s: chain %v is no restricted shoot's but has %v", gw.namespace, fc.GetFilterChainMatch().GetServerNames(), names)
					continue
				}
				Expect(count).To(Equal(1), "%s: chain %v of %s: %v", gw.namespace, fc.GetFilterChainMatch().GetServerNames(), sh.namespace, names)
				Expect(names[0]).To(Equal(envoy.NetworkFilterName), "%s: chain of %s: %v", gw.namespace, sh.namespace, names)
				Expect(string(fc.GetFilters()[0].GetTypedConfig().GetValue())).To(ContainSubstring("acl."+sh.namespace+"."), "the filter carries another shoot's policy")
			}
			for h, sh := range owner {
				Expect(chainsFor(l, h)).To(HaveLen(1), "%s: Istio built no single chain for %s of %s", gw.namespace, h, sh.namespace)
			}
		}
	})

	It("places the HTTP RBAC filter right before the router on 8443 and 8132 of every gateway with ACL shoots, its config served by ECDS", func() {
		for _, gw := range s.gateways {
			for _, port := range []int{envoy.HTTPConnectPort, envoy.LegacyVPNPort} {
				chains := httpFilters(gen[gw].listener(port))
				Expect(chains).NotTo(BeEmpty())
				for _, filters := range chains {
					var names []string
					for _, f := range filters {
						names = append(names, f.GetName())
					}
					Expect(strings.Count(strings.Join(names, ","), filterOn(port))).To(Equal(1), "%s:%d: %v", gw.namespace, port, names)
					Expect(names[len(names)-2]).To(Equal(filterOn(port)), "%s:%d: not right before the router: %v", gw.namespace, port, names)
					Expect(names[len(names)-1]).To(Equal("envoy.filters.http.router"), "%s:%d: %v", gw.namespace, port, names)
				}
				Expect(gen[gw].ecds(filterOn(port))).To(HaveKey(filterOn(port)), "%s serves no ACL config for %d", gw.namespace, port)
			}
		}
	})

	It("decides on IPv4, IPv6, always-allowed and DENY rules as configured, on both paths, and leaves shoots without ACL open", func() {
		for _, sh := range s.shoots {
			g := gen[sh.gateway]
			for _, want := range expectations(sh) {
				client := netip.MustParseAddr(want.client)
				for _, h := range hostsOf(sh) {
					Expect(g.tlsAllowed(h, client)).To(Equal(want.allowed), "TLS %s of %s from %s", h, sh.namespace, client)
				}
				for _, dest := range envoy.Destinations(sh.namespace) {
					for _, hp := range []struct {
						port   int
						header string
					}{{envoy.HTTPConnectPort, envoy.DestinationHeader}, {envoy.LegacyVPNPort, "Reversed-VPN"}} {
						d := g.httpAllowed(hp.port, hp.header, dest, client)
						Expect(d.allowed).To(Equal(want.allowed), "CONNECT :%d %s=%s of %s from %s", hp.port, hp.header, dest, sh.namespace, client)
						if sh.rule != "" {
							Expect(d.rbacEvaluations).To(Equal(1), "RBAC evaluations of one request")
						}
					}
				}
			}
		}
	})

	It("decides on 8132 by the header Gardener's route follows there, whatever the other header says", func() {
		g := gen[s.shootByNamespace("shoot--p--a").gateway]
		// A client that shoot--p--b (DENY 192.0.2.128/25) lets in, aiming at shoot--p--a (ALLOW 1.2.3.0/24).
		client := netip.MustParseAddr("8.8.8.8")
		headers := map[string]string{
			envoy.DestinationHeader: "outbound|443||kube-apiserver.shoot--p--b.svc.cluster.local",
			"Reversed-VPN":          "outbound|1194||vpn-seed-server.shoot--p--a.svc.cluster.local",
		}
		d := g.decideECDS(filterOn(envoy.LegacyVPNPort), envoytest.Request{Headers: headers, Client: client})
		Expect(d.allowed).To(BeFalse(), "routed to shoot--p--a by Reversed-VPN, the request must be decided by shoot--p--a's rule")
	})

	It("changes no other shoot's filter chain and no HTTP-CONNECT listener when one shoot's ACL changes", func() {
		a := s.shootByNamespace("shoot--p--a")
		def := a.gateway
		before := gen[def]
		a.rule = `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.4.0/24"]}}`
		s.reconcile(ctx)
		after := s.generate(ctx, def)

		changed := changedChains(before.listener(9443), after.listener(9443))
		Expect(changed).NotTo(BeEmpty(), "the shoot's own chains must change")
		for _, c := range changed {
			Expect(strings.Contains(c, "api.a.p.") || strings.Contains(c, "gu-p--a.")).To(BeTrue(), "another shoot's chain changed: %s", c)
		}
		for _, port := range []int{envoy.HTTPConnectPort, envoy.LegacyVPNPort} {
			Expect(bytes.Equal(listenerBytes(before.listener(port)), listenerBytes(after.listener(port)))).To(BeTrue(), "listener %d changed", port)
		}
		Expect(after.tlsAllowed("api.a.p.example.com", netip.MustParseAddr("1.2.4.1"))).To(BeTrue())
		Expect(after.tlsAllowed("api.a.p.example.com", netip.MustParseAddr("1.2.3.9"))).To(BeFalse())
		Expect(after.httpAllowed(envoy.HTTPConnectPort, envoy.DestinationHeader, "shoot--p--a--kube-apiserver-socket", netip.MustParseAddr("1.2.4.1")).allowed).To(BeTrue())
		Expect(after.httpAllowed(envoy.HTTPConnectPort, envoy.DestinationHeader, "shoot--p--a--kube-apiserver-socket", netip.MustParseAddr("1.2.3.9")).allowed).To(BeFalse())
		gen[def] = after
	})
})

// changedChains names the TLS filter chains that differ between two generations of a listener
// (byte for byte), or exist in one of them only.
func changedChains(before, after *listenerv3.Listener) []string {
	GinkgoHelper()
	b, a := chainBytes(before), chainBytes(after)
	var out []string
	for k, v := range a {
		if !bytes.Equal(b[k], v) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}
