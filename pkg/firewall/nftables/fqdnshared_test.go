package nftables_test

import (
	"fmt"
	"net/netip"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

var _ = Describe("Programmer with shared FQDN sets, against a recorded kernel", func() {
	var (
		k *fakeKernel
		p *nftables.Programmer
	)
	BeforeEach(func() {
		k = newFakeKernel()
		p = nftables.NewRecordingProgrammer(k.dial)
	})
	// many selectors on one port.
	many := func(n int) *fwv1alpha1.PolicySpec {
		rule := fwv1alpha1.EgressRule{Ports: []fwv1alpha1.PolicyPort{{Port: ptr.To(int32(443))}}}
		for i := range n {
			rule.ToFQDNs = append(rule.ToFQDNs, fwv1alpha1.FQDNSelector{MatchName: fmt.Sprintf("s%d.example.com", i)})
		}
		return &fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{rule}}
	}

	It("has one rule and one set per family for 10,000 selectors of one port, and changes nothing when one is added or removed", func() {
		rs := build(mixed, many(10000))
		res, err := p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Full))
		Expect(rs.FQDN).To(HaveLen(10000))
		var fqdnSets, fqdnRules int
		for _, s := range rs.Sets {
			if s.Kind == ruleset.FQDNSet {
				fqdnSets++
			}
		}
		for _, c := range rs.Chains {
			if c.Name == ruleset.FQDNChain(false) || c.Name == ruleset.FQDNChain(true) {
				fqdnRules += len(c.Rules)
			}
		}
		Expect([]int{fqdnSets, fqdnRules}).To(Equal([]int{2, 2}))
		set4 := setOf(rs, fwv1alpha1.FQDNSelector{MatchName: "s1.example.com"}, false)
		_, err = p.UpdateFQDN([]nftables.FQDNElement{
			{Set: set4, Addr: netip.MustParseAddr("192.0.2.1"), Timeout: time.Minute, Comment: "s1.example.com"},
			{Set: set4, Addr: netip.MustParseAddr("192.0.2.2"), Timeout: time.Minute, Comment: "s2.example.com"},
		})
		Expect(err).NotTo(HaveOccurred())

		for _, n := range []int{10001, 9999} {
			k.reset()
			res, err = p.Apply(build(mixed, many(n)))
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Mode).To(Equal(nftables.Unchanged), "%d selectors", n)
			Expect(k.batches()).To(BeEmpty(), "%d selectors: no batch, so no new table", n)
		}
		Expect(k.addresses(ruleset.TableName, set4)).To(Equal([]string{"192.0.2.1", "192.0.2.2"}))

		By("the proxy's delete of a removed selector's address: one element of the set, in one batch")
		k.reset()
		_, err = p.UpdateFQDN([]nftables.FQDNElement{{Set: set4, Addr: netip.MustParseAddr("192.0.2.2"), Delete: true}})
		Expect(err).NotTo(HaveOccurred())
		Expect(k.batches()).To(HaveLen(1))
		Expect(opNamesOf(k.batches()[0])).To(Equal([]string{"NEWSETELEM", "DELSETELEM"}), "added first, so that a delete of an expired element cannot fail")
		Expect(k.addresses(ruleset.TableName, set4)).To(Equal([]string{"192.0.2.1"}))

		By("deleting an address the set no longer holds is no error")
		_, err = p.UpdateFQDN([]nftables.FQDNElement{{Set: set4, Addr: netip.MustParseAddr("192.0.2.2"), Delete: true}})
		Expect(err).NotTo(HaveOccurred())
		Expect(k.addresses(ruleset.TableName, set4)).To(Equal([]string{"192.0.2.1"}))
	})
})
