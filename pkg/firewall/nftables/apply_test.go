package nftables_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset/rulesettest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
)

var fw = &fwv1alpha1.FirewallTrafficSpec{
	InternalPrefixes: []string{"10.0.1.0/24", "fd00:1::/64"},
	EgressRules:      []fwv1alpha1.EgressRuleSNAT{{Interface: "eth1", IPs: []string{"192.0.2.1"}}, {Interface: "eth2"}},
	RateLimits:       []fwv1alpha1.RateLimit{{Interface: "eth1", Rate: 100}},
}

var mixed = &fwv1alpha1.PolicySpec{
	Egress: []fwv1alpha1.EgressRule{
		{To: []fwv1alpha1.IPBlock{{CIDR: "203.0.113.0/24", Except: []string{"203.0.113.128/25"}}, {CIDR: "2001:db8::/32"}},
			Ports: []fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To(int32(8000)), EndPort: ptr.To(int32(8100))}, {Protocol: "UDP", Port: ptr.To(int32(53))}}},
		{To: []fwv1alpha1.IPBlock{{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8"}}, {CIDR: "::/0"}}},
		{To: []fwv1alpha1.IPBlock{{CIDR: "192.0.2.10/32"}, {CIDR: "2001:db8::10/128"}}, Ports: []fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To(int32(22))}}},
	},
	Ingress: []fwv1alpha1.IngressRule{
		{From: []fwv1alpha1.IPBlock{{CIDR: "198.51.100.0/24"}}, Ports: []fwv1alpha1.PolicyPort{{Protocol: "SCTP"}}},
	},
}

func build(specs ...*fwv1alpha1.PolicySpec) *ruleset.Ruleset {
	rs, err := ruleset.Build(fw, specs, nil)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return rs
}

func list(ns *netns.NS, what ...string) string {
	args := append([]string{"list"}, what...)
	if what[0] == "-a" {
		args = append([]string{"-a", "list"}, what[1:]...)
	}
	out, err := ns.Exec("nft", args...)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return out
}

// expectAsRendered loads what Render prints for rs with nft into a second
// namespace and expects the same listing as the agent's table in ns.
func expectAsRendered(ns *netns.NS, rs *ruleset.Ruleset) {
	GinkgoHelper()
	other := newNS("fwa-nft-ref")
	file := filepath.Join(GinkgoT().TempDir(), "rs.nft")
	Expect(os.WriteFile(file, []byte(ruleset.Render(rs)), 0o600)).To(Succeed())
	_, err := other.Exec("nft", "-f", file)
	Expect(err).NotTo(HaveOccurred())
	Expect(sortedElements(list(ns, "table", "inet", ruleset.TableName))).To(Equal(sortedElements(list(other, "table", "inet", ruleset.TableName))))
}

// sortedElements sorts the elements of each set in an nft listing: nft lists
// an interval set's elements in the order they were added, which differs
// between a set updated element by element and one loaded at once.
func sortedElements(listing string) string {
	var out, elems []string
	for _, line := range strings.Split(listing, "\n") {
		trimmed := strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(trimmed, "elements = { "); ok {
			elems, trimmed = []string{}, rest
		} else if elems == nil {
			out = append(out, line)
			continue
		}
		last := strings.HasSuffix(trimmed, " }")
		elems = append(elems, strings.TrimSuffix(strings.TrimSuffix(trimmed, " }"), ","))
		if last {
			slices.Sort(elems)
			out = append(out, "elements = { "+strings.Join(elems, ", ")+" }")
			elems = nil
		}
	}
	return strings.Join(out, "\n")
}

var _ = Describe("Programmer", func() {
	var (
		ns *netns.NS
		p  *nftables.Programmer
	)
	BeforeEach(func() {
		ns = newNS("fwa-nft")
		p = nftables.NewProgrammer(ns.Path())
	})

	It("programs exactly what render prints", func() {
		rs := build(mixed)
		res, err := p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Full))

		By("loading the rendered text with nft into a second namespace and comparing the listings")
		expectAsRendered(ns, rs)
		Expect(list(ns, "table", "inet", ruleset.TableName)).To(And(ContainSubstring("203.0.113.0/25 . udp . 53"),
			ContainSubstring("set egress_v6_exact {\n\t\ttype ipv6_addr . inet_proto . inet_service\n\t\telements = { 2001:db8::10 . tcp . 22 }")))
	})

	It("is idempotent and updates only set elements when policies change", func() {
		_, err := p.Apply(build(mixed))
		Expect(err).NotTo(HaveOccurred())
		handles := list(ns, "-a", "chain", "inet", ruleset.TableName, "forward")

		res, err := p.Apply(build(mixed))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Unchanged))

		extra := &fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{To: []fwv1alpha1.IPBlock{{CIDR: "192.0.2.0/24"}}, Ports: []fwv1alpha1.PolicyPort{{Port: ptr.To(int32(443))}}}}}
		res, err = p.Apply(build(mixed, extra))
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(And(HaveField("Mode", nftables.Elements), HaveField("Added", 1), HaveField("Deleted", 0)))
		Expect(list(ns, "table", "inet", ruleset.TableName)).To(ContainSubstring("192.0.2.0/24 . tcp . 443"))
		Expect(list(ns, "-a", "chain", "inet", ruleset.TableName, "forward")).To(Equal(handles), "rules (and their handles and counters) stay")

		res, err = p.Apply(build(mixed))
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(And(HaveField("Mode", nftables.Elements), HaveField("Deleted", 1)))
		Expect(list(ns, "table", "inet", ruleset.TableName)).NotTo(ContainSubstring("192.0.2.0/24"))

		By("repairing a change someone else made behind the agent's back")
		deleted := 0
		for _, set := range build(mixed).Sets {
			if !strings.HasPrefix(set.Name, "egress_v4_") || set.Kind != ruleset.AddrProtoPortSet {
				continue
			}
			if _, err := ns.Exec("nft", fmt.Sprintf("delete element inet firewall-agent %s { 203.0.113.0/25 . udp . 53 }", set.Name)); err == nil {
				deleted++
			}
		}
		Expect(deleted).To(Equal(1))
		res, err = p.Apply(build(mixed))
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(And(HaveField("Mode", nftables.Elements), HaveField("Added", 1), HaveField("Deleted", 0)))
		_, err = ns.Exec("nft", "flush chain inet firewall-agent forward")
		Expect(err).NotTo(HaveOccurred())
		res, err = p.Apply(build(mixed))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Full))

		By("changing an address range of a plain interval set in place")
		narrower := &fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{To: []fwv1alpha1.IPBlock{{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/9"}}}}}}
		res, err = p.Apply(build(narrower))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Elements))
		Expect(list(ns, "set", "inet", ruleset.TableName, "egress_any_v4")).To(ContainSubstring("0.0.0.0-9.255.255.255, 10.128.0.0-255.255.255.255"))
		res, err = p.Apply(build(narrower))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Unchanged), "the kernel's elements read back as the model's")
	})

	It("replaces the table when the rules change and leaves other tables alone", func() {
		_, err := ns.Exec("nft", "add table ip foreign; add chain ip foreign c { type filter hook forward priority 10; }; add rule ip foreign c counter")
		Expect(err).NotTo(HaveOccurred())
		_, err = p.Apply(build(mixed))
		Expect(err).NotTo(HaveOccurred())
		fw2 := *fw
		fw2.RateLimits = []fwv1alpha1.RateLimit{{Interface: "eth1", Rate: 200}}
		rs, err := ruleset.Build(&fw2, []*fwv1alpha1.PolicySpec{mixed}, nil)
		Expect(err).NotTo(HaveOccurred())
		res, err := p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Full))
		Expect(list(ns, "ruleset")).To(And(ContainSubstring("200 mbytes/second"), ContainSubstring("table ip foreign")))
		Expect(list(ns, "tables")).To(Equal("table ip foreign\ntable inet firewall-agent\n"))
	})

	It("keeps the previous ruleset when the kernel refuses a batch", func() {
		_, err := p.Apply(build(mixed))
		Expect(err).NotTo(HaveOccurred())
		before := list(ns, "ruleset")
		rs := build(mixed)
		// NAT in a filter chain: the kernel refuses the whole transaction.
		rs.Chains[0].Rules = append(rs.Chains[0].Rules, &ruleset.Rule{ID: "bad", Verdict: ruleset.Masquerade})
		_, err = p.Apply(rs)
		Expect(err).To(HaveOccurred())
		Expect(list(ns, "ruleset")).To(Equal(before))
	})

	It("applies 20,000 policy items and updates one of them", func() {
		big := policies(20000)
		rs := build(big)
		res, err := p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Full))
		GinkgoWriter.Printf("full apply of 20,000 items: %v\n", res.Duration)
		count := func(set string) int {
			n := 0
			for _, s := range rs.Sets {
				if strings.HasPrefix(s.Name, set+"_") && s.Kind.Concat() {
					n += strings.Count(list(ns, "set", "inet", ruleset.TableName, s.Name), " . tcp . ")
				}
			}
			return n
		}
		Expect(count("egress_v4")).To(Equal(4 * 15000))
		Expect(count("egress_v6")).To(Equal(4 * 5000))

		By("reading the table back, its many shards and their maps included, as the model")
		p.Forget()
		res, err = p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Unchanged))

		big.Egress[0].To[0].CIDR = "100.200.0.0/32"
		res, err = p.Apply(build(big))
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(And(HaveField("Mode", nftables.Elements), HaveField("Added", 2), HaveField("Deleted", 2)))
		GinkgoWriter.Printf("one-CIDR update at 20,000 items: %v\n", res.Duration)
		Expect(list(ns, "table", "inet", ruleset.TableName)).To(ContainSubstring("100.200.0.0 . tcp . 1000"))
	})

	It("programs a Builder's incremental rulesets as the kernel loads a fresh Build", func() {
		b := &ruleset.Builder{}
		spec := rulesettest.Policies(200, true)
		specs := []*fwv1alpha1.PolicySpec{spec, mixed}
		apply := func() {
			GinkgoHelper()
			rs, err := b.Build(fw, specs, nil)
			Expect(err).NotTo(HaveOccurred())
			_, err = p.Apply(rs)
			Expect(err).NotTo(HaveOccurred())
			expectAsRendered(ns, build(specs...))
		}
		apply()
		By("changing one CIDR to a network that overlaps others on the shared port")
		spec.Egress[0].To[0].CIDR = "198.18.0.0/28"
		apply()
		By("removing an item and adding one with a port range across the others")
		spec.Egress = append(spec.Egress[1:], fwv1alpha1.EgressRule{To: []fwv1alpha1.IPBlock{{CIDR: "198.18.0.0/22", Except: []string{"198.18.1.0/24"}}},
			Ports: []fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To(int32(400)), EndPort: ptr.To(int32(1100))}}})
		apply()
		By("dropping a policy")
		specs = specs[:1]
		apply()
	})

	It("programs services as render prints them, reads them back, and adds one as an element", func() {
		svc := func(addr string, port uint16, sources ...string) ruleset.ServiceAllow {
			a := ruleset.ServiceAllow{Addr: netip.MustParseAddr(addr), Proto: 6, Port: port}
			for _, s := range sources {
				a.Sources = append(a.Sources, cidr.RangeOf(netip.MustParsePrefix(s)))
			}
			return a
		}
		services := []ruleset.ServiceAllow{svc("10.0.1.100", 443, "203.0.113.0/24", "198.51.100.7/32"), svc("fd00:1::100", 8443)}
		rs, err := ruleset.Build(fw, []*fwv1alpha1.PolicySpec{mixed}, services)
		Expect(err).NotTo(HaveOccurred())
		res, err := p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Full))

		expectAsRendered(ns, rs)
		Expect(list(ns, "set", "inet", ruleset.TableName, "services_v4")).To(ContainSubstring("10.0.1.100 . tcp . 443 . 198.51.100.7"))

		p.Forget()
		res, err = p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Unchanged), "the kernel's service elements read back as the model's")

		more, err := ruleset.Build(fw, []*fwv1alpha1.PolicySpec{mixed}, append(services, svc("10.0.1.101", 80)))
		Expect(err).NotTo(HaveOccurred())
		res, err = p.Apply(more)
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(And(HaveField("Mode", nftables.Elements), HaveField("Added", 1), HaveField("Deleted", 0)))
		Expect(list(ns, "set", "inet", ruleset.TableName, "services_v4")).To(ContainSubstring("10.0.1.101 . tcp . 80 . 0.0.0.0/0"))
	})
})
