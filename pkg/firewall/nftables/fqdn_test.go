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

func setOf(sel fwv1alpha1.FQDNSelector, v6 bool) string {
	return ruleset.FQDNSetName(fqdn.FromAPI(sel), v6)
}

// expiresIn returns the seconds an element of the set has left, as nft
// lists it, or -1 if the set does not hold it.
func expiresIn(ns *netns.NS, set, addr string) int {
	GinkgoHelper()
	m := regexp.MustCompile(regexp.QuoteMeta(addr) + ` timeout \S+ expires (?:(\d+)m)?(\d+)s`).FindStringSubmatch(list(ns, "set", "inet", ruleset.TableName, set))
	if m == nil {
		return -1
	}
	minutes, _ := strconv.Atoi(m[1])
	seconds, _ := strconv.Atoi(m[2])
	return 60*minutes + seconds
}

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

	It("adds addresses with timeouts, refreshes them, and keeps them across applies and table replacements", func() {
		_, err := p.Apply(build(mixed, fqdnPolicy(github, s3)))
		Expect(err).NotTo(HaveOccurred())

		skipped, err := p.UpdateFQDN([]nftables.FQDNElement{
			{Set: setOf(github, false), Addr: netip.MustParseAddr("192.0.2.10"), Timeout: 100 * time.Second, Comment: "api.github.com"},
			{Set: setOf(github, true), Addr: netip.MustParseAddr("2001:db8::10"), Timeout: 100 * time.Second},
			{Set: setOf(s3, false), Addr: netip.MustParseAddr("192.0.2.20"), Timeout: 200 * time.Second, Comment: "a.s3.example.com"},
			{Set: "fqdn_0000000000000000_v4", Addr: netip.MustParseAddr("192.0.2.30"), Timeout: time.Hour},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(skipped).To(Equal(1), "a set the ruleset does not have is left out")
		Expect(list(ns, "set", "inet", ruleset.TableName, setOf(github, false))).To(ContainSubstring(`192.0.2.10 timeout 1m40s expires`))
		Expect(list(ns, "set", "inet", ruleset.TableName, setOf(github, false))).To(ContainSubstring(`comment "api.github.com"`))
		Expect(expiresIn(ns, setOf(github, true), "2001:db8::10")).To(BeNumerically(">", 90))

		By("refreshing an address with a longer timeout")
		_, err = p.UpdateFQDN([]nftables.FQDNElement{{Set: setOf(github, false), Addr: netip.MustParseAddr("192.0.2.10"), Timeout: 300 * time.Second, Refresh: true, Comment: "api.github.com"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(expiresIn(ns, setOf(github, false), "192.0.2.10")).To(BeNumerically(">", 290))

		By("refreshing an address that is gone: sent again as an add")
		_, err = ns.Exec("nft", "delete", "element", "inet", ruleset.TableName, setOf(s3, false), "{ 192.0.2.20 }")
		Expect(err).NotTo(HaveOccurred())
		_, err = p.UpdateFQDN([]nftables.FQDNElement{{Set: setOf(s3, false), Addr: netip.MustParseAddr("192.0.2.20"), Timeout: 200 * time.Second, Refresh: true}})
		Expect(err).NotTo(HaveOccurred())
		Expect(expiresIn(ns, setOf(s3, false), "192.0.2.20")).To(BeNumerically(">", 190))

		By("an element-only change of the policies")
		res, err := p.Apply(build(fqdnPolicy(github, s3)))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Elements))
		Expect(expiresIn(ns, setOf(github, false), "192.0.2.10")).To(BeNumerically(">", 280))

		By("a new selector, which replaces the table")
		other := fwv1alpha1.FQDNSelector{MatchName: "example.org"}
		res, err = p.Apply(build(fqdnPolicy(github, s3, other)))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Full))
		Expect(expiresIn(ns, setOf(github, false), "192.0.2.10")).To(BeNumerically(">", 280), "kept with the time it had left")
		Expect(expiresIn(ns, setOf(github, true), "2001:db8::10")).To(BeNumerically(">", 80))
		Expect(expiresIn(ns, setOf(s3, false), "192.0.2.20")).To(BeNumerically(">", 180))
		Expect(list(ns, "set", "inet", ruleset.TableName, setOf(github, false))).To(ContainSubstring(`comment "api.github.com"`))

		By("reading the sets back as a restarted agent does")
		restarted := nftables.NewProgrammer(ns.Path())
		sets, err := restarted.ReadFQDNSets()
		Expect(err).NotTo(HaveOccurred())
		Expect(sets).To(HaveLen(6))
		byName := map[string]nftables.FQDNSetContent{}
		for _, s := range sets {
			byName[s.Name] = s
		}
		gh := byName[setOf(github, false)]
		Expect(gh.Comment).To(Equal("=api.github.com"))
		Expect(gh.V6).To(BeFalse())
		Expect(gh.Elements).To(HaveLen(1))
		Expect(gh.Elements[0].Addr).To(Equal(netip.MustParseAddr("192.0.2.10")))
		Expect(gh.Elements[0].Comment).To(Equal("api.github.com"))
		Expect(gh.Elements[0].Timeout).To(BeNumerically(">", 280*time.Second))
		Expect(byName[setOf(github, true)].V6).To(BeTrue())
		_, err = restarted.UpdateFQDN([]nftables.FQDNElement{{Set: setOf(other, false), Addr: netip.MustParseAddr("192.0.2.40"), Timeout: time.Minute}})
		Expect(err).NotTo(HaveOccurred())
		Expect(expiresIn(ns, setOf(other, false), "192.0.2.40")).To(BeNumerically(">", 50), "a restarted programmer writes to the sets it read back")

		By("a selector removed: its set goes, the others stay")
		_, err = p.Apply(build(fqdnPolicy(s3)))
		Expect(err).NotTo(HaveOccurred())
		Expect(list(ns, "table", "inet", ruleset.TableName)).NotTo(ContainSubstring(setOf(github, false)))
		Expect(expiresIn(ns, setOf(s3, false), "192.0.2.20")).To(BeNumerically(">", 180))
		skipped, err = p.UpdateFQDN([]nftables.FQDNElement{{Set: setOf(github, false), Addr: netip.MustParseAddr("192.0.2.10"), Timeout: time.Minute}})
		Expect(err).NotTo(HaveOccurred())
		Expect(skipped).To(Equal(1))
	})
})
