package cidr_test

import (
	"net/netip"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

func r(from, to string) Range {
	return Range{From: netip.MustParseAddr(from), To: netip.MustParseAddr(to)}
}

func p(s string) Range { return RangeOf(netip.MustParsePrefix(s)) }

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
		Expect(MergeRanges([]Range{p("10.0.1.0/24"), p("fd00::/64"), p("10.0.0.0/24"), p("10.0.0.128/25"), p("10.0.3.0/24"), p("0.0.0.0/32")})).To(Equal([]Range{
			r("0.0.0.0", "0.0.0.0"), r("10.0.0.0", "10.0.1.255"), p("10.0.3.0/24"), p("fd00::/64"),
		}))
		Expect(MergeRanges([]Range{p("255.255.255.255/32"), p("255.255.255.254/32"), p("::/128")})).To(Equal([]Range{
			r("255.255.255.254", "255.255.255.255"), p("::/128"),
		}))
		Expect(MergeRanges(nil)).To(BeEmpty())
	})

	It("subtracts excepts inside, at the edges and across ranges", func() {
		Expect(SubtractRanges([]Range{p("10.0.0.0/24")}, []Range{p("10.0.0.128/25")})).To(Equal([]Range{p("10.0.0.0/25")}))
		Expect(SubtractRanges([]Range{p("10.0.0.0/24")}, []Range{p("10.0.0.0/25")})).To(Equal([]Range{p("10.0.0.128/25")}))
		Expect(SubtractRanges([]Range{p("10.0.0.0/24")}, []Range{p("10.0.0.16/28"), p("10.0.0.64/26")})).To(Equal([]Range{
			r("10.0.0.0", "10.0.0.15"), r("10.0.0.32", "10.0.0.63"), p("10.0.0.128/25"),
		}))
		Expect(SubtractRanges([]Range{p("10.0.0.0/24")}, []Range{p("10.0.0.0/24")})).To(BeEmpty())
		Expect(SubtractRanges([]Range{p("10.0.0.0/24"), p("10.0.2.0/24")}, []Range{r("10.0.0.200", "10.0.2.10")})).To(Equal([]Range{
			r("10.0.0.0", "10.0.0.199"), r("10.0.2.11", "10.0.2.255"),
		}))
		Expect(SubtractRanges([]Range{p("0.0.0.0/0")}, []Range{p("0.0.0.0/32"), p("255.255.255.255/32")})).To(Equal([]Range{
			r("0.0.0.1", "255.255.255.254"),
		}))
		Expect(SubtractRanges([]Range{p("10.0.0.0/24"), p("fd00::/64")}, []Range{p("fd00::/65")})).To(Equal([]Range{
			p("10.0.0.0/24"), p("fd00:0:0:0:8000::/65"),
		}))
	})
})
