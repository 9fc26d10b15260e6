package ruleset_test

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

var _ = Describe("toFQDNs", func() {
	fw := &fwv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.1.0/24", "fd00:1::/64"}}
	github := fwv1alpha1.FQDNSelector{MatchName: "api.github.com"}
	s3 := fwv1alpha1.FQDNSelector{MatchPattern: "*.s3.example.com"}
	policies := []*fwv1alpha1.PolicySpec{
		{Egress: []fwv1alpha1.EgressRule{{ToFQDNs: []fwv1alpha1.FQDNSelector{github, s3}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 443), port("", 443), port("UDP", 1000, 2000), port("UDP", 1500, 2500)}}}},
		{Egress: []fwv1alpha1.EgressRule{
			{ToFQDNs: []fwv1alpha1.FQDNSelector{{MatchName: "API.GitHub.com."}}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 443)}},
			{ToFQDNs: []fwv1alpha1.FQDNSelector{s3}, To: []fwv1alpha1.IPBlock{block("192.0.2.0/24")}},
		}},
	}

	It("gives each port list a set per family, shared by its selectors, a port set and one rule", func() {
		rs, err := Build(fw, policies, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(rs.FQDNSelectors()).To(ConsistOf(fqdn.FromAPI(github), fqdn.FromAPI(s3)), "the same selector in two policies is one")
		var fqdnSets []*Set
		for _, s := range rs.Sets {
			if s.Kind == FQDNSet {
				fqdnSets = append(fqdnSets, s)
				Expect(s.Elements).To(BeEmpty(), "the proxy fills it")
			}
		}
		// The first rule's port list, the second policy's tcp 443, every port.
		Expect(fqdnSets).To(HaveLen(6))
		bases := map[fqdn.Selector][]string{}
		for _, b := range rs.FQDN {
			bases[b.Selector] = b.Sets
		}
		Expect(bases).To(HaveLen(2))
		Expect(bases[fqdn.FromAPI(github)]).To(HaveLen(2))
		Expect(bases[fqdn.FromAPI(s3)]).To(ContainElement("fqdn_any"))
		Expect(bases[fqdn.FromAPI(s3)]).To(HaveLen(2))
		firstRule := bases[fqdn.FromAPI(s3)][0]
		Expect(bases[fqdn.FromAPI(github)]).To(ContainElement(firstRule), "the selectors of one rule share its set")
		for _, base := range bases[fqdn.FromAPI(github)] {
			for _, v6 := range []bool{false, true} {
				set := rs.Set(FQDNSetName(base, v6))
				Expect(set).NotTo(BeNil())
				Expect(set.Kind).To(Equal(FQDNSet))
				got, gotV6, ok := FQDNSetBase(set.Name)
				Expect([]any{got, gotV6, ok}).To(Equal([]any{base, v6, true}))
			}
		}
		out := Render(rs)
		Expect(out).To(ContainSubstring("\t\ttype ipv4_addr\n\t\tflags timeout\n\t\tcomment \"ports tcp . 443, udp . 1000-2500\"\n"))
		Expect(out).To(ContainSubstring("\t\ttype inet_proto . inet_service\n\t\tflags interval\n\t\telements = { tcp . 443,\n\t\t\t     udp . 1000-2500 }\n"))
		Expect(out).To(ContainSubstring(`ip saddr @internal_v4 jump fqdn_v4 comment "fqdn-jump-v4 `))
		Expect(out).To(ContainSubstring(`ip6 saddr @internal_v6 jump fqdn_v6 comment "fqdn-jump-v6 `))
		Expect(out).To(ContainSubstring("ip daddr @fqdn_any_v4 counter accept comment \"fqdn-v4 "), "the rule without ports allows every port")
		chain := func(name string) *Chain {
			for _, c := range rs.Chains {
				if c.Name == name {
					return c
				}
			}
			return nil
		}
		// One rule per port list, not per selector.
		Expect(chain("fqdn_v4").Rules).To(HaveLen(3))
		Expect(chain("fqdn_v6").Rules).To(HaveLen(3))
		forward := chain("forward").Rules
		Expect(forward[len(forward)-3].ID).To(Equal("fqdn-jump-v6"), "the jumps come before the logged drop")
		Expect(elements(rs, "egress_any_v4")).To(Equal([]string{"192.0.2.0/24"}), "the rule's CIDRs are enforced beside its names")
	})

	It("keeps sets, chains and rules when a selector of a port list comes or goes", func() {
		one := []*fwv1alpha1.PolicySpec{{Egress: []fwv1alpha1.EgressRule{{ToFQDNs: []fwv1alpha1.FQDNSelector{github}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 443)}}}}}
		two := []*fwv1alpha1.PolicySpec{{Egress: []fwv1alpha1.EgressRule{{ToFQDNs: []fwv1alpha1.FQDNSelector{github, s3}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 443)}}}}}
		a, err := Build(fw, one, nil)
		Expect(err).NotTo(HaveOccurred())
		b, err := Build(fw, two, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(Render(b)).To(Equal(Render(a)))
		Expect(a.FQDN).To(HaveLen(1))
		Expect(b.FQDN).To(HaveLen(2))
		Expect(b.FQDN[0].Sets).To(Equal(b.FQDN[1].Sets))
	})

	It("adds nothing to a ruleset without toFQDNs", func() {
		with, err := Build(fw, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(Render(with)).NotTo(ContainSubstring("fqdn"))
	})

	It("builds with the Builder what Build builds, as selectors come and go", func() {
		var b Builder
		for i, ps := range [][]*fwv1alpha1.PolicySpec{policies, policies[:1], nil, policies[1:], policies} {
			got, err := b.Build(fw, ps, nil)
			Expect(err).NotTo(HaveOccurred())
			want, err := Build(fw, ps, nil)
			Expect(err).NotTo(HaveOccurred())
			expectSameRuleset(got, want, "step "+string(rune('0'+i)))
		}
	})

	It("refuses a port list it cannot parse before anything changed", func() {
		var b Builder
		_, err := b.Build(fw, []*fwv1alpha1.PolicySpec{{Egress: []fwv1alpha1.EgressRule{{ToFQDNs: []fwv1alpha1.FQDNSelector{github}, Ports: []fwv1alpha1.PolicyPort{{Protocol: "ICMP"}}}}}}, nil)
		Expect(err).To(MatchError(ContainSubstring(`unknown protocol "ICMP"`)))
	})

	It("redirects DNS to the upstreams to the proxy, and guards the proxy's port", func() {
		rs, err := Build(fw, policies, nil)
		Expect(err).NotTo(HaveOccurred())
		before := Render(rs)
		with := WithDNSRedirect(rs, DNSRedirect{Upstreams: []netip.Addr{netip.MustParseAddr("10.0.0.53"), netip.MustParseAddr("2001:db8::53")}, Port: 10053})
		Expect(Render(rs)).To(Equal(before), "the ruleset given is not modified")
		out := Render(with)
		for _, line := range []string{
			"\tset dns_v4 {\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\telements = { 10.0.0.53 }\n",
			"\tset dns_v6 {\n\t\ttype ipv6_addr\n\t\tflags interval\n\t\telements = { 2001:db8::53 }\n",
			"\t\ttype nat hook prerouting priority -100; policy accept;\n",
			`meta l4proto udp th dport 53 ip saddr @internal_v4 ip daddr @dns_v4 counter redirect to :10053 comment "dns-redirect-udp-v4 `,
			`meta l4proto tcp th dport 53 ip6 saddr @internal_v6 ip6 daddr @dns_v6 counter redirect to :10053 comment "dns-redirect-tcp-v6 `,
			"\t\ttype filter hook input priority 0; policy accept;\n",
			`meta l4proto udp th dport 10053 ct status & dnat == 0 counter drop comment "dns-guard-udp `,
			`meta l4proto tcp th dport 10053 ct status & dnat == 0 counter drop comment "dns-guard-tcp `,
		} {
			Expect(out).To(ContainSubstring(line))
		}
		if os.Geteuid() == 0 {
			By("checking that nft accepts the output")
			file := filepath.Join(GinkgoT().TempDir(), "ruleset.nft")
			Expect(os.WriteFile(file, []byte(out), 0o600)).To(Succeed())
			b, err := exec.Command("unshare", "--net", "nft", "-c", "-f", file).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), strings.TrimSpace(string(b)))
		}
	})
})
