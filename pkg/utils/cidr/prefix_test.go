package cidr_test

import (
	"net/netip"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

var _ = Describe("Parse", func() {
	It("masks the host bits", func() {
		Expect(cidr.Parse("10.1.2.3/8")).To(Equal(netip.MustParsePrefix("10.0.0.0/8")))
		Expect(cidr.Parse("2001:db8::1/32")).To(Equal(netip.MustParsePrefix("2001:db8::/32")))
	})

	DescribeTable("refuses what has no clear meaning, saying why",
		func(in, want string) {
			_, err := cidr.Parse(in)
			Expect(err).To(MatchError(ContainSubstring(want)))
			Expect(len(err.Error())).To(BeNumerically("<", 200))
		},
		Entry("a bare address", "10.0.0.1", "not a CIDR"),
		Entry("a short address", "10.0.0/8", "not a CIDR"),
		Entry("surrounding blanks", " 10.0.0.0/8", "not a CIDR"),
		Entry("an IPv4-mapped IPv6 network", "::ffff:10.0.0.0/104", "IPv4-mapped"),
		Entry("a huge input, not echoed", string(make([]byte, 4096)), "not a CIDR"),
	)
})

var _ = Describe("Merge", func() {
	It("drops duplicates and prefixes that another one covers, sorted", func() {
		got := cidr.Strings(cidr.Merge(prefixes("10.1.0.0/16", "10.0.0.0/8", "192.168.1.0/24", "2001:db8::/32", "2001:db8:1::/48", "192.168.1.0/24")))
		Expect(got).To(Equal([]string{"10.0.0.0/8", "192.168.1.0/24", "2001:db8::/32"}))
	})

	It("matches the quadratic definition", func() {
		in := prefixes("10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "10.2.0.0/15", "10.3.0.0/16", "11.0.0.0/8", "9.255.0.0/16",
			"0.0.0.0/0", "2001:db8::/32", "2001:db8::/48", "::/0", "192.168.0.0/16")
		Expect(cidr.Strings(cidr.Merge(in))).To(Equal([]string{"0.0.0.0/0", "::/0"}))
		Expect(cidr.Strings(cidr.Merge(in[:7]))).To(Equal([]string{"9.255.0.0/16", "10.0.0.0/8", "11.0.0.0/8"}))
	})
})

var _ = Describe("Subtract", func() {
	DescribeTable("returns the rest as the fewest prefixes",
		func(from, remove, want []string) {
			Expect(cidr.Strings(cidr.Subtract(prefixes(from...), prefixes(remove...)))).To(Equal(append([]string{}, want...)))
		},
		Entry(nil, []string{"10.0.0.0/8"}, []string{"10.0.0.0/8"}, nil),
		Entry(nil, []string{"10.0.0.0/8"}, []string{"0.0.0.0/0"}, nil),
		Entry(nil, []string{"10.0.0.0/8"}, []string{"192.168.0.0/16", "2001:db8::/32"}, []string{"10.0.0.0/8"}),
		Entry(nil, []string{"10.0.0.0/30"}, []string{"10.0.0.1/32"}, []string{"10.0.0.0/32", "10.0.0.2/31"}),
		Entry(nil, []string{"10.0.0.0/8"}, []string{"10.128.0.0/9"}, []string{"10.0.0.0/9"}),
		Entry(nil, []string{"2001:db8::/32"}, []string{"2001:db8:8000::/33"}, []string{"2001:db8::/33"}),
	)

	It("covers exactly the rest", func() {
		from := prefixes("10.0.0.0/16")
		remove := prefixes("10.0.3.7/32", "10.0.128.0/20")
		rest := cidr.Subtract(from, remove)
		for i := range 1 << 16 {
			a := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
			inRest := slices.ContainsFunc(rest, func(p netip.Prefix) bool { return p.Contains(a) })
			removed := slices.ContainsFunc(remove, func(p netip.Prefix) bool { return p.Contains(a) })
			Expect(inRest).NotTo(Equal(removed), a.String())
		}
	})
})

var _ = Describe("Range.Prefixes", func() {
	It("decomposes a range into the fewest networks", func() {
		r := cidr.Range{From: netip.MustParseAddr("10.0.0.1"), To: netip.MustParseAddr("10.0.1.4")}
		Expect(cidr.Strings(r.Prefixes())).To(Equal([]string{"10.0.0.1/32", "10.0.0.2/31", "10.0.0.4/30", "10.0.0.8/29", "10.0.0.16/28", "10.0.0.32/27", "10.0.0.64/26", "10.0.0.128/25", "10.0.1.0/30", "10.0.1.4/32"}))
		Expect(cidr.Strings(cidr.RangeOf(netip.MustParsePrefix("::/0")).Prefixes())).To(Equal([]string{"::/0"}))
		Expect(cidr.Strings(cidr.Range{From: netip.MustParseAddr("255.255.255.255"), To: netip.MustParseAddr("255.255.255.255")}.Prefixes())).To(Equal([]string{"255.255.255.255/32"}))
	})
})
