package ruleset_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset/rulesettest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// expectSameRuleset compares two rulesets set by set, element by element
// (nil and empty alike), and by their rendering, which covers the chains.
func expectSameRuleset(got, want *Ruleset, context string) {
	GinkgoHelper()
	Expect(len(got.Sets)).To(Equal(len(want.Sets)), context)
	for i, s := range want.Sets {
		g := got.Sets[i]
		Expect([]any{g.Name, g.V6, g.Kind}).To(Equal([]any{s.Name, s.V6, s.Kind}), context)
		if !slices.Equal(g.Elements, s.Elements) {
			added, removed := DiffElements(s.Elements, g.Elements)
			Fail(fmt.Sprintf("%s: set %s differs from a full Build: %d extra %v, %d missing %v", context, s.Name, len(added), added, len(removed), removed))
		}
	}
	Expect(Render(got)).To(Equal(Render(want)), context)
}

// randomPolicies makes policies over small address and port spaces, so that
// ranges overlap, touch, nest and are cut by excepts, and port ranges
// overlap: what the box decomposition must get right.
type randomPolicies struct{ rnd *rand.Rand }

func (g randomPolicies) block() fwv1alpha1.IPBlock {
	v6 := g.rnd.IntN(4) == 0
	bits := 24 + g.rnd.IntN(9)
	base := netip.AddrFrom4([4]byte{10, 0, byte(g.rnd.IntN(2)), byte(g.rnd.IntN(256))})
	if v6 {
		bits = 120 + g.rnd.IntN(9)
		a := netip.MustParseAddr("2001:db8::").As16()
		a[14], a[15] = byte(g.rnd.IntN(2)), byte(g.rnd.IntN(256))
		base = netip.AddrFrom16(a)
	}
	p := netip.PrefixFrom(base, bits).Masked()
	b := fwv1alpha1.IPBlock{CIDR: p.String()}
	if p.Bits() < p.Addr().BitLen()-1 && g.rnd.IntN(4) == 0 {
		// An except inside the block: a longer prefix at a random place in it.
		r := cidr.RangeOf(p)
		off := g.rnd.IntN(1 << (p.Addr().BitLen() - p.Bits()))
		a := r.From
		for range off {
			a = a.Next()
		}
		b.Except = []string{netip.PrefixFrom(a, p.Bits()+1+g.rnd.IntN(p.Addr().BitLen()-p.Bits())).Masked().String()}
	}
	return b
}

func (g randomPolicies) ports() []fwv1alpha1.PolicyPort {
	if g.rnd.IntN(6) == 0 {
		return nil // every port and protocol
	}
	var out []fwv1alpha1.PolicyPort
	for range 1 + g.rnd.IntN(3) {
		pp := fwv1alpha1.PolicyPort{Protocol: []string{"", "TCP", "UDP", "SCTP", "tcp"}[g.rnd.IntN(5)]}
		if g.rnd.IntN(8) > 0 {
			pp.Port = ptr.To(int32(1 + g.rnd.IntN(20)))
			if g.rnd.IntN(3) == 0 {
				pp.EndPort = ptr.To(*pp.Port + int32(g.rnd.IntN(6)))
			}
		}
		out = append(out, pp)
	}
	return out
}

func (g randomPolicies) blocks() []fwv1alpha1.IPBlock {
	var out []fwv1alpha1.IPBlock
	for range 1 + g.rnd.IntN(3) {
		out = append(out, g.block())
	}
	return out
}

func (g randomPolicies) policy() *fwv1alpha1.PolicySpec {
	p := &fwv1alpha1.PolicySpec{}
	for range g.rnd.IntN(5) {
		p.Egress = append(p.Egress, fwv1alpha1.EgressRule{To: g.blocks(), Ports: g.ports()})
	}
	for range g.rnd.IntN(3) {
		p.Ingress = append(p.Ingress, fwv1alpha1.IngressRule{From: g.blocks(), Ports: g.ports()})
	}
	return p
}

func (g randomPolicies) services() []ServiceAllow {
	var out []ServiceAllow
	for range g.rnd.IntN(3) {
		a := ServiceAllow{Addr: netip.AddrFrom4([4]byte{10, 0, 1, byte(g.rnd.IntN(4))}), Proto: 6, Port: uint16(80 + g.rnd.IntN(2))}
		if g.rnd.IntN(2) == 0 {
			a.Sources = []cidr.Range{cidr.RangeOf(netip.MustParsePrefix(g.block().CIDR))}
		}
		out = append(out, a)
	}
	return out
}

// change makes one random change to the policies, in place or by copy, as
// the agent's sources do.
func (g randomPolicies) change(policies []*fwv1alpha1.PolicySpec) []*fwv1alpha1.PolicySpec {
	pick := func() *fwv1alpha1.PolicySpec {
		if len(policies) == 0 {
			return nil
		}
		return policies[g.rnd.IntN(len(policies))]
	}
	switch g.rnd.IntN(9) {
	case 0: // a new policy somewhere
		i := g.rnd.IntN(len(policies) + 1)
		return slices.Insert(policies, i, g.policy())
	case 1: // a policy goes
		if len(policies) > 0 {
			i := g.rnd.IntN(len(policies))
			return slices.Delete(policies, i, i+1)
		}
	case 2: // one CIDR of an egress rule changes, in place
		if p := pick(); p != nil && len(p.Egress) > 0 {
			r := &p.Egress[g.rnd.IntN(len(p.Egress))]
			r.To[g.rnd.IntN(len(r.To))] = g.block()
		}
	case 3: // the ports of an ingress rule change
		if p := pick(); p != nil && len(p.Ingress) > 0 {
			p.Ingress[g.rnd.IntN(len(p.Ingress))].Ports = g.ports()
		}
	case 4: // a rule is inserted
		if p := pick(); p != nil {
			p.Egress = slices.Insert(p.Egress, g.rnd.IntN(len(p.Egress)+1), fwv1alpha1.EgressRule{To: g.blocks(), Ports: g.ports()})
		}
	case 5: // a rule goes
		if p := pick(); p != nil && len(p.Egress) > 0 {
			i := g.rnd.IntN(len(p.Egress))
			p.Egress = slices.Delete(p.Egress, i, i+1)
		}
	case 6: // a rule moves to another policy
		from, to := pick(), pick()
		if from != nil && len(from.Egress) > 0 {
			i := g.rnd.IntN(len(from.Egress))
			r := from.Egress[i]
			from.Egress = slices.Delete(from.Egress, i, i+1)
			to.Egress = slices.Insert(to.Egress, g.rnd.IntN(len(to.Egress)+1), r)
		}
	case 7: // a rule appears twice
		if p := pick(); p != nil && len(p.Ingress) > 0 {
			p.Ingress = append(p.Ingress, *p.Ingress[g.rnd.IntN(len(p.Ingress))].DeepCopy())
		}
	case 8: // the policies are reordered
		g.rnd.Shuffle(len(policies), func(i, j int) { policies[i], policies[j] = policies[j], policies[i] })
	}
	return policies
}

var _ = Describe("Builder", func() {
	fw := &fwv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.1.0/24", "fd00:1::/64"}}

	It("builds after random policy changes exactly what a full Build builds", func() {
		// Shards of at most 4 elements: the layout is cut, kept and made
		// afresh many times over.
		DeferCleanup(SetShardTarget(4))
		relayouts := 0
		for seed := range uint64(20) {
			g := randomPolicies{rand.New(rand.NewPCG(seed, 42))}
			var policies []*fwv1alpha1.PolicySpec
			for range 1 + g.rnd.IntN(4) {
				policies = append(policies, g.policy())
			}
			services := g.services()
			b := &Builder{}
			var previous *Ruleset
			var previousText string
			for step := range 150 {
				context := fmt.Sprintf("seed %d, step %d", seed, step)
				for range 1 + g.rnd.IntN(3) {
					policies = g.change(policies)
				}
				if g.rnd.IntN(10) == 0 {
					services = g.services()
				}
				layoutsBefore := b.Layouts()
				got, err := b.Build(fw, policies, services)
				Expect(err).NotTo(HaveOccurred(), context)
				if !reflect.DeepEqual(b.Layouts(), layoutsBefore) {
					relayouts++
				}
				want, err := BuildWith(fw, policies, services, b.Layouts())
				Expect(err).NotTo(HaveOccurred(), context)
				expectSameRuleset(got, want, context)
				if previous != nil {
					Expect(Render(previous)).To(Equal(previousText), "%s: a ruleset handed out stays as it was", context)
				}
				previous, previousText = got, Render(got)
			}
			fresh, err := (&Builder{}).Build(fw, policies, services)
			Expect(err).NotTo(HaveOccurred())
			want, err := Build(fw, policies, services)
			Expect(err).NotTo(HaveOccurred())
			expectSameRuleset(fresh, want, fmt.Sprintf("seed %d, a fresh builder", seed))
		}
		Expect(relayouts).To(BeNumerically(">", 20), "layouts changed")
		Expect(relayouts).To(BeNumerically("<", 20*150/2), "most changes keep the layout")
	})

	It("keeps its state when a Build fails", func() {
		policies := []*fwv1alpha1.PolicySpec{rulesettest.Policies(50, true)}
		b := &Builder{}
		before, err := b.Build(fw, policies, nil)
		Expect(err).NotTo(HaveOccurred())

		bad := rulesettest.OneCIDRChanged(policies[0], true)
		bad.Egress = append(bad.Egress, fwv1alpha1.EgressRule{To: []fwv1alpha1.IPBlock{{CIDR: "10.0.0/8"}}})
		_, err = b.Build(fw, []*fwv1alpha1.PolicySpec{bad}, nil)
		Expect(err).To(MatchError(ContainSubstring(`cidr "10.0.0/8"`)))

		again, err := b.Build(fw, policies, nil)
		Expect(err).NotTo(HaveOccurred())
		expectSameRuleset(again, before, "after a failed Build")
		for i := range again.Sets {
			Expect(len(again.Sets[i].Elements) == 0 || &again.Sets[i].Elements[0] == &before.Sets[i].Elements[0]).To(BeTrue(),
				"set %s: nothing changed, so the very same slice", again.Sets[i].Name)
		}
	})

	It("changes only the sets a one-CIDR change touches", func() {
		spec := rulesettest.Policies(2000, true)
		b := &Builder{}
		before, err := b.Build(fw, []*fwv1alpha1.PolicySpec{spec}, nil)
		Expect(err).NotTo(HaveOccurred())
		after, err := b.Build(fw, []*fwv1alpha1.PolicySpec{rulesettest.OneCIDRChanged(spec, true)}, nil)
		Expect(err).NotTo(HaveOccurred())
		var changed []string
		added, removed := 0, 0
		for i, s := range after.Sets {
			old := before.Sets[i].Elements
			if len(old) > 0 && len(s.Elements) > 0 && &old[0] == &s.Elements[0] && len(old) == len(s.Elements) {
				continue
			}
			a, r := DiffElements(old, s.Elements)
			if len(a)+len(r) > 0 {
				changed = append(changed, s.Name)
			}
			added, removed = added+len(a), removed+len(r)
		}
		// The /32 on ports 1000 and 443 leaves the hash set; the /24 on the
		// same ports joins the shards.
		Expect(changed).To(ContainElement("egress_v4_exact"))
		Expect(len(changed)).To(BeNumerically("<=", 3))
		Expect([]int{added, removed}).To(Equal([]int{2, 2}))
	})
})
