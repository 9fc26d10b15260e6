package ruleset_test

import (
	"math/rand/v2"
	"net/netip"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

func r(from, to string) Range {
	return Range{From: netip.MustParseAddr(from), To: netip.MustParseAddr(to)}
}

func p(s string) Range { return PrefixRange(netip.MustParsePrefix(s)) }

var _ = Describe("Intervals", func() {
	It("turns networks into ranges", func() {
		Expect(p("10.0.0.0/8")).To(Equal(r("10.0.0.0", "10.255.255.255")))
		Expect(p("10.1.2.3/32")).To(Equal(r("10.1.2.3", "10.1.2.3")))
		Expect(p("0.0.0.0/0")).To(Equal(r("0.0.0.0", "255.255.255.255")))
		Expect(p("10.0.0.0/13")).To(Equal(r("10.0.0.0", "10.7.255.255")))
		Expect(p("fd00::/64")).To(Equal(r("fd00::", "fd00::ffff:ffff:ffff:ffff")))
		Expect(p("::/0")).To(Equal(r("::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")))
	})

	It("prints ranges as nft does", func() {
		Expect(p("10.0.0.0/8").String()).To(Equal("10.0.0.0/8"))
		Expect(r("10.0.0.1", "10.0.0.1").String()).To(Equal("10.0.0.1"))
		Expect(r("10.0.0.1", "10.0.0.2").String()).To(Equal("10.0.0.1-10.0.0.2"))
	})

	It("merges overlapping and touching ranges, keeping families apart", func() {
		Expect(Merge([]Range{p("10.0.1.0/24"), p("fd00::/64"), p("10.0.0.0/24"), p("10.0.0.128/25"), p("10.0.3.0/24"), p("0.0.0.0/32")})).To(Equal([]Range{
			r("0.0.0.0", "0.0.0.0"), r("10.0.0.0", "10.0.1.255"), p("10.0.3.0/24"), p("fd00::/64"),
		}))
		Expect(Merge([]Range{p("255.255.255.255/32"), p("255.255.255.254/32"), p("::/128")})).To(Equal([]Range{
			r("255.255.255.254", "255.255.255.255"), p("::/128"),
		}))
		Expect(Merge(nil)).To(BeEmpty())
	})

	It("subtracts excepts inside, at the edges and across ranges", func() {
		Expect(Subtract([]Range{p("10.0.0.0/24")}, []Range{p("10.0.0.128/25")})).To(Equal([]Range{p("10.0.0.0/25")}))
		Expect(Subtract([]Range{p("10.0.0.0/24")}, []Range{p("10.0.0.0/25")})).To(Equal([]Range{p("10.0.0.128/25")}))
		Expect(Subtract([]Range{p("10.0.0.0/24")}, []Range{p("10.0.0.16/28"), p("10.0.0.64/26")})).To(Equal([]Range{
			r("10.0.0.0", "10.0.0.15"), r("10.0.0.32", "10.0.0.63"), p("10.0.0.128/25"),
		}))
		Expect(Subtract([]Range{p("10.0.0.0/24")}, []Range{p("10.0.0.0/24")})).To(BeEmpty())
		Expect(Subtract([]Range{p("10.0.0.0/24"), p("10.0.2.0/24")}, []Range{r("10.0.0.200", "10.0.2.10")})).To(Equal([]Range{
			r("10.0.0.0", "10.0.0.199"), r("10.0.2.11", "10.0.2.255"),
		}))
		Expect(Subtract([]Range{p("0.0.0.0/0")}, []Range{p("0.0.0.0/32"), p("255.255.255.255/32")})).To(Equal([]Range{
			r("0.0.0.1", "255.255.255.254"),
		}))
		Expect(Subtract([]Range{p("10.0.0.0/24"), p("fd00::/64")}, []Range{p("fd00::/65")})).To(Equal([]Range{
			p("10.0.0.0/24"), p("fd00:0:0:0:8000::/65"),
		}))
	})
})

var _ = Describe("DiffElements", func() {
	It("finds what a map-based diff finds, in one pass over sorted lists", func() {
		rnd := rand.New(rand.NewPCG(1, 2))
		elem := func() Element {
			a := netip.AddrFrom4([4]byte{10, 0, 0, byte(rnd.IntN(16))})
			return Element{Addr: Range{From: a, To: a}, Proto: 6, PortFrom: uint16(rnd.IntN(4)), PortTo: 10}
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
