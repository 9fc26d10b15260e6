package ruleset_test

import (
	"math/rand/v2"
	"net/netip"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset/rulesettest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

var _ = Describe("shard layout", func() {
	fw := &fwv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.1.0/24"}}
	addr := netip.MustParseAddr

	It("cuts where two addresses first differ", func() {
		Expect(SplitPoint(addr("10.0.0.0"), addr("10.0.0.255"))).To(Equal(addr("10.0.0.128")))
		Expect(SplitPoint(addr("10.0.0.7"), addr("10.0.1.0"))).To(Equal(addr("10.0.1.0")))
		Expect(SplitPoint(addr("0.0.0.0"), addr("255.255.255.255"))).To(Equal(addr("128.0.0.0")))
		Expect(SplitPoint(addr("2001:db8::1"), addr("2001:db8::3"))).To(Equal(addr("2001:db8::2")))
	})

	It("spreads the ranges over shards of at most ShardTarget, each inside its jump", func() {
		rnd := rand.New(rand.NewPCG(1, 2))
		spec := &fwv1alpha1.PolicySpec{}
		for range 5000 {
			// Clustered: most in two /16s, some anywhere, some wide.
			a := netip.AddrFrom4([4]byte{byte(rnd.IntN(256)), byte(rnd.IntN(256)), byte(rnd.IntN(256)), 0})
			if c := rnd.IntN(10); c < 8 {
				a = netip.AddrFrom4([4]byte{100, byte(64 + c%2), byte(rnd.IntN(256)), byte(rnd.IntN(16) * 16)})
			}
			bits := 28
			if rnd.IntN(50) == 0 {
				bits = 12
			}
			port := int32(1 + rnd.IntN(1000))
			spec.Egress = append(spec.Egress, fwv1alpha1.EgressRule{
				To:    []fwv1alpha1.IPBlock{{CIDR: netip.PrefixFrom(a, bits).Masked().String()}},
				Ports: []fwv1alpha1.PolicyPort{{Port: &port}},
			})
		}
		rs, err := Build(fw, []*fwv1alpha1.PolicySpec{spec}, nil)
		Expect(err).NotTo(HaveOccurred())

		jumps := rs.Set(DispatchName(SetEgress, false)).Elements
		Expect(len(jumps)).To(BeNumerically(">", 5000/ShardTarget))
		Expect(jumps[0].Addr.From).To(Equal(addr("0.0.0.0")))
		Expect(jumps[len(jumps)-1].Addr.To).To(Equal(addr("255.255.255.255")))
		total := len(rs.Set(SpanName(SetEgress, false)).Elements)
		for i, j := range jumps {
			if i > 0 {
				Expect(j.Addr.From).To(Equal(jumps[i-1].Addr.To.Next()), "the jumps cover every address once")
			}
			Expect(j.Chain).To(Equal(ShardName(SetEgress, false, i)))
			shard := rs.Set(j.Chain).Elements
			Expect(shard).NotTo(BeEmpty(), "no empty shard")
			Expect(len(shard)).To(BeNumerically("<=", ShardTarget))
			for _, e := range shard {
				Expect(e.Addr.From.Compare(j.Addr.From) >= 0 && e.Addr.To.Compare(j.Addr.To) <= 0).To(BeTrue(), "%v in %v", e.Addr, j.Addr)
			}
			total += len(shard)
		}
		for _, e := range rs.Set(SpanName(SetEgress, false)).Elements {
			Expect(slices.ContainsFunc(jumps, func(j Element) bool {
				return e.Addr.From.Compare(j.Addr.From) >= 0 && e.Addr.To.Compare(j.Addr.To) <= 0
			})).To(BeFalse(), "%v crosses a bound", e.Addr)
		}
		Expect(rs.Elements(SetEgress, false)).To(HaveLen(total+len(rs.Set(ExactName(SetEgress, false)).Elements)), "every element once")
	})

	It("keeps one address on many port ranges in one shard", func() {
		var elements []Element
		for p := range 3 * ShardTarget {
			elements = append(elements, Element{Addr: cidr.Range{From: addr("192.0.2.0"), To: addr("192.0.2.1")}, Proto: 6, PortFrom: uint16(2 * p), PortTo: uint16(2*p + 1)})
		}
		Expect(Bounds(elements)).To(BeEmpty())
	})

	It("keeps the layout of a Builder while it is balanced, and lays out afresh when it is not", func() {
		spec := rulesettest.Policies(3000, true)
		b := &Builder{}
		first, err := b.Build(fw, []*fwv1alpha1.PolicySpec{spec}, nil)
		Expect(err).NotTo(HaveOccurred())
		laidOut := b.Layouts()
		fresh, err := Build(fw, []*fwv1alpha1.PolicySpec{spec}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(Render(first)).To(Equal(Render(fresh)), "the first layout is the fresh one")

		By("a change of a few elements keeps it")
		_, err = b.Build(fw, []*fwv1alpha1.PolicySpec{rulesettest.OneCIDRChanged(spec, true)}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Layouts()).To(Equal(laidOut))

		By("a shard that doubles is cut")
		grown := rulesettest.OneCIDRChanged(spec, false)
		for i := range 2 * ShardTarget {
			grown.Egress = append(grown.Egress, fwv1alpha1.EgressRule{
				To:    []fwv1alpha1.IPBlock{{CIDR: netip.AddrFrom4([4]byte{203, 0, byte(i >> 6), byte(i&63) * 4}).String() + "/31"}}, // apart: nothing merges,
				Ports: []fwv1alpha1.PolicyPort{{Port: ptrTo(int32(22))}},
			})
		}
		_, err = b.Build(fw, []*fwv1alpha1.PolicySpec{grown}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Layouts()).NotTo(Equal(laidOut))
		cut := b.Layouts()

		By("shrinking to a quarter lays out afresh, with fewer shards")
		small := rulesettest.Policies(500, true)
		rs, err := b.Build(fw, []*fwv1alpha1.PolicySpec{small}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Layouts()).NotTo(Equal(cut))
		fresh, err = Build(fw, []*fwv1alpha1.PolicySpec{small}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(Render(rs)).To(Equal(Render(fresh)))
	})
})

func ptrTo[T any](v T) *T { return &v }
