package ruleset

import (
	"math/bits"
	"net/netip"
	"slices"
	"sort"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// ShardTarget is the most range elements a shard of an address . proto .
// port set holds when its layout is made. The kernel's set type for
// concatenated intervals (pipapo) looks an element up by walking the set and
// then shifts its lookup tables to remove it: removing one element from a set
// of 3,750 took about 20 ms here, from one of 512 about 3 ms. Adding is cheap.
const ShardTarget = 512

// shardTarget is ShardTarget, small in tests that need many shards from
// few elements.
var shardTarget = ShardTarget

// shardLayout cuts the address space of one family into shards: shard i
// holds the range elements that start at or after bounds[i-1] (shard 0: from
// the first address) and end before bounds[i] (the last shard: up to the last
// address). A range element that crosses a bound goes to the span set, which
// every packet of the family is matched against. The forward chain jumps,
// through a verdict map on the address, to the one shard a packet's address
// can match: a new connection costs one map lookup and one shard lookup
// however many shards there are.
type shardLayout struct {
	bounds []netip.Addr
}

// shards is the number of shards.
func (l shardLayout) shards() int { return len(l.bounds) + 1 }

// shardOf returns the shard that holds e, or -1 when e crosses a bound.
func (l shardLayout) shardOf(e Element) int {
	i := sort.Search(len(l.bounds), func(i int) bool { return l.bounds[i].Compare(e.Addr.From) > 0 })
	if i < len(l.bounds) && e.Addr.To.Compare(l.bounds[i]) >= 0 {
		return -1
	}
	return i
}

// layOut returns the layout of elements (sorted by CompareElements, so by
// start address): a shard with more than ShardTarget elements is cut in two
// where the starts of its elements first differ in a bit, at the first
// address with that bit set. The bounds are prefix boundaries that depend
// only on which elements a shard holds, so a change of a few elements moves
// a bound only where a shard crosses ShardTarget, and no shard is empty.
func layOut(elements []Element) shardLayout {
	starts := make([]netip.Addr, len(elements))
	for i, e := range elements {
		starts[i] = e.Addr.From
	}
	return shardLayout{bounds: cut(starts, nil)}
}

// cut appends the bounds of the sorted starts to bounds.
func cut(starts []netip.Addr, bounds []netip.Addr) []netip.Addr {
	if len(starts) <= shardTarget || starts[0] == starts[len(starts)-1] {
		return bounds // small enough, or one address on many ports
	}
	at := splitPoint(starts[0], starts[len(starts)-1])
	i, _ := slices.BinarySearchFunc(starts, at, netip.Addr.Compare)
	bounds = cut(starts[:i], bounds)
	bounds = append(bounds, at)
	return cut(starts[i:], bounds)
}

// splitPoint returns, for a < b of one family, the address that has the bits
// a and b share, then the first bit in which they differ set, then zeros:
// a < splitPoint(a, b) <= b.
func splitPoint(a, b netip.Addr) netip.Addr {
	x, y := a.AsSlice(), b.AsSlice()
	for i := range x {
		if d := x[i] ^ y[i]; d != 0 {
			top := byte(0x80) >> bits.LeadingZeros8(d)
			x[i] = x[i]&^(top|(top-1)) | top
			clear(x[i+1:])
			break
		}
	}
	s, _ := netip.AddrFromSlice(x)
	return s
}

// dispatch returns the elements of the verdict map that jumps to the shards
// of the set base of the given family: one address range per shard.
func (l shardLayout) dispatch(base string, v6 bool) []Element {
	first := netip.IPv4Unspecified()
	if v6 {
		first = netip.IPv6Unspecified()
	}
	out := make([]Element, 0, l.shards())
	for i := range l.shards() {
		to := LastAddress(v6)
		if i < len(l.bounds) {
			to = l.bounds[i].Prev()
		}
		out = append(out, Element{Addr: cidr.Range{From: first, To: to}, Chain: ShardName(base, v6, i)})
		if i < len(l.bounds) {
			first = l.bounds[i]
		}
	}
	return out
}

// LastAddress is the highest address of the family.
func LastAddress(v6 bool) netip.Addr {
	if v6 {
		return netip.AddrFrom16([16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	}
	return netip.AddrFrom4([4]byte{0xff, 0xff, 0xff, 0xff})
}

// distribute spreads the range elements (sorted by CompareElements) over
// the shards of l, and those that cross a bound into span; each stays sorted.
func (l shardLayout) distribute(elements []Element) (span []Element, shards [][]Element) {
	shards = make([][]Element, l.shards())
	for _, e := range elements {
		if i := l.shardOf(e); i >= 0 {
			shards[i] = append(shards[i], e)
		} else {
			span = append(span, e)
		}
	}
	return span, shards
}

// shardedSets returns the sets of the range elements of base and family
// (sorted by CompareElements) laid out by l: the span set, the shards and the
// verdict map that jumps to them.
func shardedSets(base string, v6 bool, l shardLayout, elements []Element) []*Set {
	span, shards := l.distribute(elements)
	sets := make([]*Set, 0, len(shards)+2)
	sets = append(sets, &Set{Name: SpanName(base, v6), V6: v6, Kind: AddrProtoPortSet, Elements: span})
	for i, elems := range shards {
		sets = append(sets, &Set{Name: ShardName(base, v6, i), V6: v6, Kind: AddrProtoPortSet, Elements: elems})
	}
	return append(sets, &Set{Name: DispatchName(base, v6), V6: v6, Kind: DispatchMap, Elements: l.dispatch(base, v6)})
}

// shardChains returns the chains the verdict map of base and family jumps
// to, one per shard, each accepting what its shard holds. Their rules share
// the ID of the span rule: one counter for the ranges of base.
func shardChains(base string, v6 bool, l shardLayout) []*Chain {
	chains := make([]*Chain, l.shards())
	for i := range chains {
		name := ShardName(base, v6, i)
		chains[i] = &Chain{Name: name, Rules: []*Rule{{ID: rangesRuleID(base, v6), Family: family(v6),
			ConcatSet: name, ConcatSaddr: base == SetIngress, Counter: true, Verdict: Accept}}}
	}
	return chains
}
