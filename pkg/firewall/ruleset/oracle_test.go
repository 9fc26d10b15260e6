package ruleset_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

func block(cidr string, except ...string) fwv1alpha1.IPBlock {
	return fwv1alpha1.IPBlock{CIDR: cidr, Except: except}
}

func port(proto string, from int32, to ...int32) fwv1alpha1.PolicyPort {
	pp := fwv1alpha1.PolicyPort{Protocol: proto, Port: ptr.To(from)}
	if len(to) > 0 {
		pp.EndPort = ptr.To(to[0])
	}
	return pp
}

// elements lists the elements of e.g. egress_v4 over all its shards.
func elements(rs *Ruleset, name string) []string {
	v6 := strings.HasSuffix(name, "_v6")
	base := strings.TrimSuffix(strings.TrimSuffix(name, "_v4"), "_v6")
	kind := AddrSet
	if base == SetEgress || base == SetIngress {
		kind = AddrProtoPortSet
	}
	var out []string
	for _, e := range rs.Elements(base, v6) {
		out = append(out, ElementText(kind, e))
	}
	return out
}

var _ = Describe("Build", func() {
	fw := &fwv1alpha1.FirewallTrafficSpec{
		InternalPrefixes: []string{"10.0.1.0/24", "fd00:1::/64", "10.0.0.0/24"},
		EgressRules:      []fwv1alpha1.EgressRuleSNAT{{Interface: "eth1", IPs: []string{"192.0.2.1"}}, {Interface: "eth2"}},
		RateLimits:       []fwv1alpha1.RateLimit{{Interface: "eth1", Rate: 100}},
	}

	It("puts policies into sets and keeps the rules fixed", func() {
		rs, err := Build(fw, []*fwv1alpha1.PolicySpec{{
			Egress: []fwv1alpha1.EgressRule{
				{To: []fwv1alpha1.IPBlock{block("203.0.113.0/24", "203.0.113.128/25"), block("2001:db8::/32")}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 8000, 8100), port("", 443)}},
				{To: []fwv1alpha1.IPBlock{block("192.0.2.0/24")}},
			},
			Ingress: []fwv1alpha1.IngressRule{{From: []fwv1alpha1.IPBlock{block("198.51.100.0/24")}, Ports: []fwv1alpha1.PolicyPort{port("UDP", 53), {Protocol: "SCTP"}}}},
		}}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(elements(rs, "internal_v4")).To(Equal([]string{"10.0.0.0/23"}))
		Expect(elements(rs, "internal_v6")).To(Equal([]string{"fd00:1::/64"}))
		Expect(elements(rs, "egress_v4")).To(Equal([]string{"203.0.113.0/25 . tcp . 443", "203.0.113.0/25 . tcp . 8000-8100"}))
		Expect(elements(rs, "egress_v6")).To(Equal([]string{"2001:db8::/32 . tcp . 443", "2001:db8::/32 . tcp . 8000-8100"}))
		Expect(elements(rs, "egress_any_v4")).To(Equal([]string{"192.0.2.0/24"}))
		Expect(elements(rs, "ingress_v4")).To(Equal([]string{"198.51.100.0/24 . udp . 53", "198.51.100.0/24 . sctp . 0-65535"}))

		more, err := Build(fw, []*fwv1alpha1.PolicySpec{{Egress: []fwv1alpha1.EgressRule{{To: []fwv1alpha1.IPBlock{block("1.2.3.4/32")}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 22)}}}}}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(Render(rs), "th dport @egress_v4_")).To(Equal(3), "the exact set, the span set and the one shard")
		Expect(rs.Set("egress_v4_exact").Elements).To(BeEmpty(), "no single host on a single port here")
		Expect(len(more.Chains[0].Rules)).To(Equal(len(rs.Chains[0].Rules)), "the number of rules does not depend on the policies")
	})

	It("splits overlapping port ranges into disjoint elements", func() {
		rs, err := Build(fw, []*fwv1alpha1.PolicySpec{{Egress: []fwv1alpha1.EgressRule{
			{To: []fwv1alpha1.IPBlock{block("10.10.0.0/24")}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 80, 90)}},
			{To: []fwv1alpha1.IPBlock{block("10.10.0.128/25"), block("10.10.1.0/24")}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 85, 100)}},
			{To: []fwv1alpha1.IPBlock{block("10.10.0.0/24")}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 80, 90)}},
		}}}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(elements(rs, "egress_v4")).To(Equal([]string{
			"10.10.0.0/24 . tcp . 80-84",
			"10.10.0.0/23 . tcp . 85-90",
			"10.10.0.128-10.10.1.255 . tcp . 91-100",
		}))
		// The elements must be pairwise disjoint and cover exactly the union.
		all := rs.Elements(SetEgress, false)
		for i, a := range all {
			for _, b := range all[i+1:] {
				overlap := a.Proto == b.Proto && a.PortFrom <= b.PortTo && b.PortFrom <= a.PortTo &&
					a.Addr.From.Compare(b.Addr.To) <= 0 && b.Addr.From.Compare(a.Addr.To) <= 0
				Expect(overlap).To(BeFalse(), "%v overlaps %v", a, b)
			}
		}
	})

	It("puts single hosts on single ports into the hash set, once", func() {
		rs, err := Build(fw, []*fwv1alpha1.PolicySpec{{Egress: []fwv1alpha1.EgressRule{
			{To: []fwv1alpha1.IPBlock{block("10.10.0.5/32"), block("10.10.0.0/30", "10.10.0.0/31", "10.10.0.3/32")}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 80)}},
			{To: []fwv1alpha1.IPBlock{block("10.10.0.5/32")}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 80), port("UDP", 80)}},
			{To: []fwv1alpha1.IPBlock{block("10.10.0.0/24")}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 80, 90)}},
		}}}, nil)
		Expect(err).NotTo(HaveOccurred())
		var exact []string
		for _, e := range rs.Set("egress_v4_exact").Elements {
			exact = append(exact, ElementText(AddrProtoPortExactSet, e))
		}
		Expect(exact).To(Equal([]string{"10.10.0.2 . tcp . 80", "10.10.0.5 . tcp . 80", "10.10.0.5 . udp . 80"}))
		Expect(elements(rs, "egress_v4")).To(ContainElement("10.10.0.0/24 . tcp . 80-90"))
	})

	It("renders the ruleset in nft syntax", func() {
		rs, err := Build(fw, []*fwv1alpha1.PolicySpec{{Egress: []fwv1alpha1.EgressRule{{To: []fwv1alpha1.IPBlock{block("203.0.113.0/24")}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 8000, 8100)}}}}}, nil)
		Expect(err).NotTo(HaveOccurred())
		out := Render(rs)
		Expect(out).To(HavePrefix("table inet firewall-agent {\n"))
		for _, line := range []string{
			"\tset egress_v4_0 {\n\t\ttype ipv4_addr . inet_proto . inet_service\n\t\tflags interval\n",
			"\t\telements = { 203.0.113.0/24 . tcp . 8000-8100 }\n",
			"\t\ttype filter hook forward priority 0; policy drop;\n",
			`iifname "eth1" limit rate over 100 mbytes/second counter drop comment "ratelimit:eth1 `,
			`ct state established,related counter accept comment "established `,
			"\tmap egress_v4_shards {\n\t\ttype ipv4_addr : verdict\n\t\tflags interval\n\t\telements = { 0.0.0.0/0 : jump egress_v4_0 }\n",
			`ip saddr @internal_v4 ip daddr vmap @egress_v4_shards comment "egress-dispatch-v4 `,
			`ip saddr @internal_v4 ip daddr . meta l4proto . th dport @egress_v4_span counter accept comment "egress-v4 `,
			"\tchain egress_v4_0 {\n\t\tip daddr . meta l4proto . th dport @egress_v4_0 counter accept comment \"egress-v4 ",
			`ip6 daddr @internal_v6 ip6 saddr vmap @ingress_v6_shards comment "ingress-dispatch-v6 `,
			`ip6 saddr . meta l4proto . th dport @ingress_v6_0 counter accept comment "ingress-v6 `,
			`limit rate 10/second log prefix "firewall-agent drop: " comment "log-drop `,
			`oifname "eth1" ip saddr @internal_v4 counter snat ip to 192.0.2.1 comment "snat:eth1-v4 `,
			`oifname "eth2" ip6 saddr @internal_v6 counter masquerade comment "masquerade:eth2-v6 `,
		} {
			Expect(out).To(ContainSubstring(line))
		}
		Expect(out).NotTo(ContainSubstring("snat ip6"), "eth1 translates IPv4 only")

		if os.Geteuid() == 0 {
			By("checking that nft accepts the output")
			file := filepath.Join(GinkgoT().TempDir(), "ruleset.nft")
			Expect(os.WriteFile(file, []byte(out), 0o600)).To(Succeed())
			cmd := exec.Command("unshare", "--net", "nft", "-c", "-f", file)
			b, err := cmd.CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), strings.TrimSpace(string(b)))
		}
	})
})
