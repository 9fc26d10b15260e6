package ruleset_test

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

var _ = Describe("Build with services", func() {
	network := func(s string) cidr.Range { return cidr.RangeOf(netip.MustParsePrefix(s)) }
	serviceElements := func(rs *Ruleset, v6 bool) []string {
		var out []string
		for _, e := range rs.Set(SetName(SetServices, v6)).Elements {
			out = append(out, ElementText(ServiceSet, e))
		}
		return out
	}

	It("allows each service's sources to its address and port, anyone when it names none", func() {
		rs, err := Build(nil, nil, []ServiceAllow{
			{Addr: netip.MustParseAddr("10.0.1.100"), Proto: 6, Port: 443, Sources: []cidr.Range{network("203.0.113.0/24"), network("2001:db8::/32")}},
			{Addr: netip.MustParseAddr("10.0.1.101"), Proto: 17, Port: 53},
			{Addr: netip.MustParseAddr("fd00:1::100"), Proto: 6, Port: 443},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(serviceElements(rs, false)).To(Equal([]string{
			"10.0.1.100 . tcp . 443 . 203.0.113.0/24",
			"10.0.1.101 . udp . 53 . 0.0.0.0/0",
		}))
		Expect(serviceElements(rs, true)).To(Equal([]string{"fd00:1::100 . tcp . 443 . ::/0"}))
		Expect(Render(rs)).To(And(
			ContainSubstring("type ipv4_addr . inet_proto . inet_service . ipv4_addr"),
			ContainSubstring(`ip daddr . meta l4proto . th dport . ip saddr @services_v4 counter accept comment "service-v4`),
		))
		if os.Geteuid() == 0 {
			By("checking that nft accepts the output")
			file := filepath.Join(GinkgoT().TempDir(), "ruleset.nft")
			Expect(os.WriteFile(file, []byte(Render(rs)), 0o600)).To(Succeed())
			out, err := exec.Command("unshare", "--net", "nft", "-c", "-f", file).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), strings.TrimSpace(string(out)))
		}
	})

	It("merges the sources of two services on the same address and port, which the kernel would refuse as overlaps", func() {
		rs, err := Build(nil, nil, []ServiceAllow{
			{Addr: netip.MustParseAddr("10.0.1.100"), Proto: 6, Port: 443, Sources: []cidr.Range{network("203.0.113.0/25")}},
			{Addr: netip.MustParseAddr("10.0.1.100"), Proto: 6, Port: 443, Sources: []cidr.Range{network("203.0.113.0/24"), network("198.51.100.0/24")}},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(serviceElements(rs, false)).To(Equal([]string{
			"10.0.1.100 . tcp . 443 . 198.51.100.0/24",
			"10.0.1.100 . tcp . 443 . 203.0.113.0/24",
		}))
	})

	It("has the service sets and rules without any service, so a new Service only changes elements", func() {
		with, err := Build(nil, nil, []ServiceAllow{{Addr: netip.MustParseAddr("10.0.1.100"), Proto: 6, Port: 443}})
		Expect(err).NotTo(HaveOccurred())
		without, err := Build(nil, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(without.Set(SetName(SetServices, false))).NotTo(BeNil())
		Expect(len(without.Sets)).To(Equal(len(with.Sets)))
		Expect(without.Chains[0].Rules).To(HaveLen(len(with.Chains[0].Rules)))
	})
})
