package dnsproxy

import (
	"errors"
	"net/netip"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

var _ = Describe("allowed, as the clock moves", func() {
	const (
		ttl   = 300 * time.Second
		floor = 60 * time.Second
		grace = 60 * time.Second
	)
	bounds := Bounds{AddressesPerName: 64, NamesPerSelector: 1024, Addresses: 1000}

	It("refreshes an address that an answer with the full TTL every time asks for only once half the grace has gone", func() {
		a := newAllowed()
		sel := fqdn.Selector{Name: "api.github.com"}
		Expect(a.setSelectors([]ruleset.FQDNBinding{{Selector: sel, Sets: []string{"fqdn_any"}}}, time.Now(), nil)).To(Succeed())
		found := []found{{name: "api.github.com", addr: netip.MustParseAddr("192.0.2.1"), ttl: ttl, selectors: a.match([]string{"api.github.com"})[0]}}
		var writes [][]nftables.FQDNElement
		write := func(e []nftables.FQDNElement) error {
			writes = append(writes, e)
			return nil
		}
		t0 := time.Now()
		answer := func(at time.Duration) {
			if !a.fresh(found, t0.Add(at), floor, grace) {
				_, err := a.update(found, t0.Add(at), floor, grace, bounds, write)
				Expect(err).NotTo(HaveOccurred())
			}
		}
		answer(0)
		Expect(writes).To(HaveLen(1))
		Expect(writes[0][0].Timeout).To(Equal(ttl + grace))
		for _, at := range []time.Duration{time.Second, 10 * time.Second, 29 * time.Second} {
			answer(at)
		}
		Expect(writes).To(HaveLen(1), "allowed for the TTL and at least half the grace after each of these answers")
		answer(31 * time.Second)
		Expect(writes).To(HaveLen(2))
		Expect(writes[1][0]).To(And(HaveField("Timeout", ttl+grace), HaveField("Refresh", true)))
	})

	It("refreshes on every answer that moves the expiry without a grace", func() {
		a := newAllowed()
		sel := fqdn.Selector{Name: "api.github.com"}
		Expect(a.setSelectors([]ruleset.FQDNBinding{{Selector: sel, Sets: []string{"fqdn_any"}}}, time.Now(), nil)).To(Succeed())
		found := []found{{name: "api.github.com", addr: netip.MustParseAddr("192.0.2.1"), ttl: ttl, selectors: a.match([]string{"api.github.com"})[0]}}
		writes := 0
		t0 := time.Now()
		for _, at := range []time.Duration{0, 0, time.Second, 2 * time.Second} {
			if !a.fresh(found, t0.Add(at), floor, 0) {
				_, err := a.update(found, t0.Add(at), floor, 0, bounds, func([]nftables.FQDNElement) error { writes++; return nil })
				Expect(err).NotTo(HaveOccurred())
			}
		}
		Expect(writes).To(Equal(3), "not for the answer at the same instant")
	})

	It("calls an address live while every set holds it for the margin yet: its answer need not wait for the refresh", func() {
		a := newAllowed()
		github := fqdn.Selector{Name: "api.github.com"}
		Expect(a.setSelectors([]ruleset.FQDNBinding{{Selector: github, Sets: []string{"fqdn_any", "fqdn_443"}}}, time.Now(), nil)).To(Succeed())
		found := []found{{name: "api.github.com", names: []string{"api.github.com"}, addr: netip.MustParseAddr("192.0.2.1"), ttl: ttl,
			selectors: a.match([]string{"api.github.com"})[0]}}
		t0 := time.Now()
		Expect(a.live(found, t0, 5*time.Second)).To(BeFalse(), "not in any set yet: the answer waits")
		_, err := a.update(found, t0, floor, grace, bounds, func([]nftables.FQDNElement) error { return nil })
		Expect(err).NotTo(HaveOccurred())
		// Allowed until t0 + 300s + 60s.
		Expect(a.live(found, t0.Add(354*time.Second), 5*time.Second)).To(BeTrue())
		Expect(a.live(found, t0.Add(356*time.Second), 5*time.Second)).To(BeFalse(), "about to expire: the answer waits for the refresh")

		By("a set the selector is newly bound to, which lacks the address")
		Expect(a.setSelectors([]ruleset.FQDNBinding{{Selector: github, Sets: []string{"fqdn_any", "fqdn_443", "fqdn_80"}}}, t0,
			func([]nftables.FQDNElement) error { return errors.New("refused") })).NotTo(Succeed())
		Expect(a.live(found, t0, 5*time.Second)).To(BeFalse())
	})
})
