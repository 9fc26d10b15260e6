package nftables_test

import (
	"net/netip"
	"regexp"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
)

var (
	github = fwv1alpha1.FQDNSelector{MatchName: "api.github.com"}
	s3     = fwv1alpha1.FQDNSelector{MatchPattern: "*.s3.example.com"}
)

func fqdnPolicy(sels ...fwv1alpha1.FQDNSelector) *fwv1alpha1.PolicySpec {
	return &fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{ToFQDNs: sels, Ports: []fwv1alpha1.PolicyPort{{Port: ptr.To(int32(443))}, {Protocol: "UDP", Port: ptr.To(int32(443))}}}}}
}

// setOf returns the name of the FQDN set that takes sel's addresses in rs
// (its first port list's).
func setOf(rs *ruleset.Ruleset, sel fwv1alpha1.FQDNSelector, v6 bool) string {
	GinkgoHelper()
	for _, b := range rs.FQDN {
		if b.Selector == fqdn.FromAPI(sel) {
			return ruleset.FQDNSetName(b.Sets[0], v6)
		}
	}
	Fail("no FQDN set for " + sel.MatchName + sel.MatchPattern)
	return ""
}

// expiresIn is how many whole seconds the element has left in the set, -1
// when the set lacks it.
func expiresIn(ns *netns.NS, set, addr string) int {
	GinkgoHelper()
	m := regexp.MustCompile(regexp.QuoteMeta(addr) + ` timeout \S+ expires ((?:\d+(?:ms|d|h|m|s))+)`).FindStringSubmatch(list(ns, "set", "inet", ruleset.TableName, set))
	if m == nil {
		return -1
	}
	return int(nftDuration(m[1]) / time.Second)
}

// nftDuration reads a time as nft prints it: 1d2h3m4s5ms, zero parts left
// out. An element listed within the jiffy it was added in has its whole
// timeout left, "expires 1m": a parser that wants seconds misses it.
func nftDuration(s string) time.Duration {
	units := map[string]time.Duration{"d": 24 * time.Hour, "h": time.Hour, "m": time.Minute, "s": time.Second, "ms": time.Millisecond}
	var d time.Duration
	for _, p := range regexp.MustCompile(`(\d+)(ms|d|h|m|s)`).FindAllStringSubmatch(s, -1) {
		n, _ := strconv.Atoi(p[1])
		d += time.Duration(n) * units[p[2]]
	}
	return d
}

var _ = DescribeTable("nft's times", func(printed string, want time.Duration) {
	Expect(nftDuration(printed)).To(Equal(want))
},
	Entry("a whole minute, as listed in the jiffy of the add", "1m", time.Minute),
	Entry("seconds and milliseconds", "59s976ms", 59*time.Second+976*time.Millisecond),
	Entry("minutes and seconds", "4m59s", 4*time.Minute+59*time.Second),
	Entry("days and hours", "1d2h", 26*time.Hour),
)

var _ = Describe("Programmer with FQDN sets", func() {
	var (
		ns *netns.NS
		p  *nftables.Programmer
	)
	BeforeEach(func() {
		ns = newNS("fwa-fqdn")
		p = nftables.NewProgrammer(ns.Path())
	})
	withDNS := func(rs *ruleset.Ruleset) *ruleset.Ruleset {
		return ruleset.WithDNSRedirect(rs, ruleset.DNSRedirect{Upstreams: []netip.Addr{netip.MustParseAddr("10.0.0.53"), netip.MustParseAddr("2001:db8::53")}, Port: 10053})
	}

	It("programs the FQDN sets, chains and the DNS redirect exactly as render prints them", func() {
		rs := withDNS(build(mixed, fqdnPolicy(github, s3)))
		_, err := p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		expectAsRendered(ns, rs)
		res, err := p.Apply(withDNS(build(mixed, fqdnPolicy(github, s3))))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Unchanged), "what the kernel lists is what was asked for")
	})

	It("adds addresses with timeouts, refreshes and deletes them, and keeps them across applies and table replacements", func() {
		rs := build(mixed, fqdnPolicy(github, s3))
		_, err := p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		set4, set6 := setOf(rs, github, false), setOf(rs, github, true)
		Expect(setOf(rs, s3, false)).To(Equal(set4), "the selectors of one port list share its set")

		skipped, err := p.UpdateFQDN([]nftables.FQDNElement{
			{Set: set4, Addr: netip.MustParseAddr("192.0.2.10"), Timeout: 100 * time.Second, Comment: "api.github.com"},
			{Set: set6, Addr: netip.MustParseAddr("2001:db8::10"), Timeout: 100 * time.Second},
			{Set: set4, Addr: netip.MustParseAddr("192.0.2.20"), Timeout: 200 * time.Second, Comment: "a.s3.example.com"},
			{Set: "fqdn_000000000000_v4", Addr: netip.MustParseAddr("192.0.2.30"), Timeout: time.Hour},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(skipped).To(Equal(1), "a set the ruleset does not have is left out")
		Expect(list(ns, "set", "inet", ruleset.TableName, set4)).To(ContainSubstring(`192.0.2.10 timeout 1m40s expires`))
		Expect(list(ns, "set", "inet", ruleset.TableName, set4)).To(ContainSubstring(`comment "api.github.com"`))
		Expect(expiresIn(ns, set6, "2001:db8::10")).To(BeNumerically(">", 90))

		By("refreshing an address with a longer timeout")
		_, err = p.UpdateFQDN([]nftables.FQDNElement{{Set: set4, Addr: netip.MustParseAddr("192.0.2.10"), Timeout: 300 * time.Second, Refresh: true, Comment: "api.github.com"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(expiresIn(ns, set4, "192.0.2.10")).To(BeNumerically(">", 290))

		By("refreshing an address that is gone: sent again as an add")
		_, err = ns.Exec("nft", "delete", "element", "inet", ruleset.TableName, set4, "{ 192.0.2.20 }")
		Expect(err).NotTo(HaveOccurred())
		_, err = p.UpdateFQDN([]nftables.FQDNElement{{Set: set4, Addr: netip.MustParseAddr("192.0.2.20"), Timeout: 200 * time.Second, Refresh: true}})
		Expect(err).NotTo(HaveOccurred())
		Expect(expiresIn(ns, set4, "192.0.2.20")).To(BeNumerically(">", 190))

		By("an element-only change of the policies")
		res, err := p.Apply(build(fqdnPolicy(github, s3)))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Elements))
		Expect(expiresIn(ns, set4, "192.0.2.10")).To(BeNumerically(">", 280))

		By("a new selector with the same ports: the table stays as it is")
		handle := tableHandle(ns)
		other := fwv1alpha1.FQDNSelector{MatchName: "example.org"}
		res, err = p.Apply(build(fqdnPolicy(github, s3, other)))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Unchanged))
		Expect(tableHandle(ns)).To(Equal(handle))

		By("a new port list: its set and rule come with a new table")
		port80 := &fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{ToFQDNs: []fwv1alpha1.FQDNSelector{other}, Ports: []fwv1alpha1.PolicyPort{{Port: ptr.To(int32(80))}}}}}
		two := build(fqdnPolicy(github, s3, other), port80)
		res, err = p.Apply(two)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Full))
		Expect(tableHandle(ns)).NotTo(Equal(handle), "the handle tells a replaced table")
		Expect(expiresIn(ns, set4, "192.0.2.10")).To(BeNumerically(">", 280), "kept with the time it had left")
		Expect(expiresIn(ns, set6, "2001:db8::10")).To(BeNumerically(">", 80))
		Expect(expiresIn(ns, set4, "192.0.2.20")).To(BeNumerically(">", 180))
		Expect(list(ns, "set", "inet", ruleset.TableName, set4)).To(ContainSubstring(`comment "api.github.com"`))
		set80 := ""
		for _, b := range two.FQDN {
			if b.Selector == fqdn.FromAPI(other) {
				Expect(b.Sets).To(HaveLen(2))
				set80 = ruleset.FQDNSetName(b.Sets[0], false)
				if set80 == set4 {
					set80 = ruleset.FQDNSetName(b.Sets[1], false)
				}
			}
		}

		By("reading the sets back as a restarted agent does")
		restarted := nftables.NewProgrammer(ns.Path())
		sets, err := restarted.ReadFQDNSets()
		Expect(err).NotTo(HaveOccurred())
		Expect(sets).To(HaveLen(4), "two port lists, two families")
		byName := map[string]nftables.FQDNSetContent{}
		for _, s := range sets {
			byName[s.Name] = s
		}
		shared := byName[set4]
		Expect(shared.Comment).To(Equal("ports tcp . 443, udp . 443"))
		Expect(shared.V6).To(BeFalse())
		Expect(shared.Elements).To(HaveLen(2))
		Expect(shared.Elements).To(ContainElement(And(HaveField("Addr", netip.MustParseAddr("192.0.2.10")), HaveField("Comment", "api.github.com"),
			HaveField("Timeout", BeNumerically(">", 280*time.Second)))))
		Expect(byName[set6].V6).To(BeTrue())
		_, err = restarted.UpdateFQDN([]nftables.FQDNElement{{Set: set80, Addr: netip.MustParseAddr("192.0.2.40"), Timeout: time.Minute}})
		Expect(err).NotTo(HaveOccurred())
		Expect(expiresIn(ns, set80, "192.0.2.40")).To(BeNumerically(">", 50), "a restarted programmer writes to the sets it read back")

		By("deleting one address of a shared set, and one that is gone already, in one transaction")
		handle = tableHandle(ns)
		_, err = p.UpdateFQDN([]nftables.FQDNElement{
			{Set: set4, Addr: netip.MustParseAddr("192.0.2.10"), Delete: true},
			{Set: set4, Addr: netip.MustParseAddr("192.0.2.99"), Delete: true},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(expiresIn(ns, set4, "192.0.2.10")).To(Equal(-1))
		Expect(expiresIn(ns, set4, "192.0.2.99")).To(Equal(-1))
		Expect(expiresIn(ns, set4, "192.0.2.20")).To(BeNumerically(">", 180), "the other address of the set stays")
		Expect(tableHandle(ns)).To(Equal(handle))

		By("a port list removed: its set goes, the others stay")
		_, err = p.Apply(build(fqdnPolicy(s3)))
		Expect(err).NotTo(HaveOccurred())
		Expect(list(ns, "table", "inet", ruleset.TableName)).NotTo(ContainSubstring(set80))
		Expect(expiresIn(ns, set4, "192.0.2.20")).To(BeNumerically(">", 180))
		skipped, err = p.UpdateFQDN([]nftables.FQDNElement{{Set: set80, Addr: netip.MustParseAddr("192.0.2.10"), Timeout: time.Minute}})
		Expect(err).NotTo(HaveOccurred())
		Expect(skipped).To(Equal(1))
	})
})

// tableHandle is the kernel's handle of the agent's table: a replacement
// gives it a new one.
func tableHandle(ns *netns.NS) string {
	GinkgoHelper()
	out, err := ns.Exec("nft", "-a", "list", "table", "inet", ruleset.TableName)
	Expect(err).NotTo(HaveOccurred(), out)
	m := regexp.MustCompile(`table inet ` + ruleset.TableName + ` \{ # handle (\d+)`).FindStringSubmatch(out)
	Expect(m).NotTo(BeNil(), out)
	return m[1]
}
