package ruleset_test

import (
	"math/rand/v2"
	"net/netip"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

var _ = Describe("DiffElements", func() {
	It("finds what a map-based diff finds, in one pass over sorted lists", func() {
		rnd := rand.New(rand.NewPCG(1, 2))
		elem := func() Element {
			a := netip.AddrFrom4([4]byte{10, 0, 0, byte(rnd.IntN(16))})
			return Element{Addr: cidr.Range{From: a, To: a}, Proto: 6, PortFrom: uint16(rnd.IntN(4)), PortTo: 10}
		}
		for range 200 {
			var have, want []Element
			for range rnd.IntN(20) {
				have = append(have, elem())
			}
			for range rnd.IntN(20) {
				want = append(want, elem())
			}
			for _, l := range []*[]Element{&have, &want} {
				slices.SortFunc(*l, CompareElements)
				*l = slices.Compact(*l)
			}
			added, removed := DiffElements(have, want)
			var wantAdded, wantRemoved []Element
			for _, e := range want {
				if !slices.Contains(have, e) {
					wantAdded = append(wantAdded, e)
				}
			}
			for _, e := range have {
				if !slices.Contains(want, e) {
					wantRemoved = append(wantRemoved, e)
				}
			}
			Expect(added).To(Equal(wantAdded))
			Expect(removed).To(Equal(wantRemoved))
		}
	})
})
