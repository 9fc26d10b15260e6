package dnsproxy_test

import (
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy/dnsproxytest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// shared binds selectors to the sets of the given bases, as the ruleset
// does for the selectors of the same port lists.
func shared(bases []string, selectors ...fwv1alpha1.FQDNSelector) []ruleset.FQDNBinding {
	var out []ruleset.FQDNBinding
	for _, s := range selectors {
		out = append(out, ruleset.FQDNBinding{Selector: sel(s), Sets: bases})
	}
	return out
}

var _ = Describe("Proxy with selectors that share a set", func() {
	anyPort := []string{"fqdn_any"}
	anySet := ruleset.FQDNSetName("fqdn_any", false)
	// api.github.com and x.s3.example.com share 192.0.2.9.
	reply := func(q *dns.Msg, tcp bool) [][]byte {
		name := q.Question[0].Name
		if strings.HasPrefix(name, "api.") {
			return dnsproxytest.Answer(name+" 30 IN A 192.0.2.1", name+" 30 IN A 192.0.2.9")(q, tcp)
		}
		return dnsproxytest.Answer(name+" 30 IN A 192.0.2.2", name+" 30 IN A 192.0.2.9")(q, tcp)
	}

	It("writes an address once per set, and deletes of a removed selector only what no other selector of its set allows", func() {
		f := start(reply, defaultBounds)
		Expect(f.proxy.SetSelectors(shared(anyPort, github, wildcard))).To(Succeed())
		f.ask("udp", "api.github.com.", dns.TypeA)
		f.ask("udp", "x.s3.example.com.", dns.TypeA)
		Expect(f.rec.written()).To(Equal(map[string][]string{anySet: {"192.0.2.1", "192.0.2.2", "192.0.2.9"}}))
		Expect(f.rec.elems[len(f.rec.elems)-1]).To(And(HaveField("Addr", netip.MustParseAddr("192.0.2.9")), HaveField("Comment", "x.s3.example.com api.github.com")),
			"the shared address is written again once, for its comment to name both")

		calls := f.rec.updates()
		Expect(f.proxy.SetSelectors(shared(anyPort, wildcard))).To(Succeed())
		Expect(f.rec.deleted()).To(Equal(map[string][]string{anySet: {"192.0.2.1"}}), "192.0.2.9 stays: the pattern allows it too")
		Expect(f.rec.updates()).To(Equal(calls+1), "one transaction")
		Expect(f.proxy.Status(sel(github), 16).Enforced).To(BeFalse())
		Expect(f.proxy.Status(sel(wildcard), 16).Addresses).To(Equal([]netip.Addr{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.9")}))

		By("an answer for the removed selector's name changes nothing")
		f.ask("udp", "api.github.com.", dns.TypeA)
		Expect(f.rec.updates()).To(Equal(calls + 1))

		By("the same selectors again: nothing to write")
		Expect(f.proxy.SetSelectors(shared(anyPort, wildcard))).To(Succeed())
		Expect(f.rec.updates()).To(Equal(calls + 1))
	})

	It("writes a selector's addresses into a set it is newly bound to", func() {
		f := start(reply, defaultBounds)
		Expect(f.proxy.SetSelectors(shared(anyPort, github, wildcard))).To(Succeed())
		f.ask("udp", "api.github.com.", dns.TypeA)
		Expect(f.proxy.SetSelectors(append(shared([]string{"fqdn_443", "fqdn_any"}, github), shared(anyPort, wildcard)...))).To(Succeed())
		Expect(f.rec.written()).To(HaveKeyWithValue(ruleset.FQDNSetName("fqdn_443", false), []string{"192.0.2.1", "192.0.2.9"}))
		Expect(f.rec.deleted()).To(BeEmpty())
	})

	It("gives a restarted agent's elements back to the selectors their names match, and deletes those nobody claims", func() {
		f := start(reply, defaultBounds)
		el := func(addr, comment string) nftables.FQDNElement {
			return nftables.FQDNElement{Addr: netip.MustParseAddr(addr), Timeout: time.Minute, Comment: comment}
		}
		f.proxy.Restore([]nftables.FQDNSetContent{{Name: anySet, Elements: []nftables.FQDNElement{
			el("192.0.2.1", "api.github.com"), el("192.0.2.2", "x.s3.example.com"),
			el("192.0.2.9", "api.github.com x.s3.example.com"), el("192.0.2.5", "gone.example.com"),
			el("192.0.2.6", "bad\\046name"),
		}}})
		Expect(f.proxy.Status(sel(github), 16).Addresses).To(HaveLen(2), "until the first apply, the names of the elements are enforced")
		Expect(f.proxy.SetSelectors(shared(anyPort, github, wildcard))).To(Succeed())
		Expect(f.rec.deleted()).To(HaveKeyWithValue(anySet, ConsistOf("192.0.2.5", "192.0.2.6")))
		Expect(f.rec.written()).To(BeEmpty(), "what the selectors claim stays as it is")
		Expect(f.proxy.Status(sel(github), 16).Addresses).To(Equal([]netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.9")}))
		Expect(f.proxy.Status(sel(wildcard), 16).Addresses).To(Equal([]netip.Addr{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.9")}))

		By("removing one selector then keeps the address the other claimed")
		Expect(f.proxy.SetSelectors(shared(anyPort, github))).To(Succeed())
		Expect(f.rec.deleted()[anySet]).To(ConsistOf("192.0.2.5", "192.0.2.6", "192.0.2.2"))
	})

	It("carries the addresses of sets gone with the table into the new sets of their selectors, as after an upgrade from a set per selector", func() {
		f := start(reply, defaultBounds)
		f.proxy.Restore([]nftables.FQDNSetContent{{Name: set(github, false), Elements: []nftables.FQDNElement{
			{Addr: netip.MustParseAddr("192.0.2.1"), Timeout: time.Minute, Comment: "api.github.com"},
		}}})
		Expect(f.proxy.SetSelectors(shared(anyPort, github, wildcard))).To(Succeed())
		Expect(f.rec.written()).To(Equal(map[string][]string{anySet: {"192.0.2.1"}}))
		Expect(f.rec.deleted()).To(BeEmpty(), "the old set went with the table")
		Expect(f.rec.elem(0).Timeout).To(BeNumerically("~", time.Minute, 2*time.Second), "with the time it had left")
	})
})
