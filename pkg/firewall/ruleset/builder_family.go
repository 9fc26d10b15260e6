package ruleset

import (
	"slices"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// famState holds the sets of one direction and family.
type famState struct {
	// any is the union of the addresses allowed on every port.
	any    coverage
	anyOut []Element
	protos map[uint8]*protoState
	// exact are the hash set's elements; exactN counts, index by index,
	// the rules and boxes that put each there.
	exact  []Element
	exactN []int32
	// The range elements are spread over shards by layout (see
	// shardLayout), which stays as it is while it is balanced: a layout
	// change replaces the table. laidOutN is the number of range elements
	// when it was made; dispatch caches the elements of its verdict map.
	layout   shardLayout
	laidOut  bool
	laidOutN int
	span     []Element
	shards   [][]Element
	dispatch []Element
	// shardChains caches the chains of the layout: the very same rules
	// tell the programmer at a glance that they did not change.
	shardChains []*Chain
}

// chains returns the shard chains of base and the family, as layoutChains
// does.
func (f *famState) chains(base string, v6 bool) []*Chain {
	if f.shardChains == nil {
		f.shardChains = shardChains(base, v6, f.layout)
	}
	return f.shardChains
}

// concatSets returns the sets of base and the family as the oracle's
// concatSets does: the hash set, the span set, the shards and the verdict map.
func (f *famState) concatSets(base string, v6 bool) []*Set {
	if f.dispatch == nil {
		f.dispatch = f.layout.dispatch(base, v6)
	}
	sets := make([]*Set, 0, f.layout.shards()+3)
	sets = append(sets, &Set{Name: ExactName(base, v6), V6: v6, Kind: AddrProtoPortExactSet, Elements: f.exact})
	sets = append(sets, &Set{Name: SpanName(base, v6), V6: v6, Kind: AddrProtoPortSet, Elements: f.span})
	for i := range f.layout.shards() {
		var elems []Element
		if i < len(f.shards) {
			elems = f.shards[i]
		}
		sets = append(sets, &Set{Name: ShardName(base, v6, i), V6: v6, Kind: AddrProtoPortSet, Elements: elems})
	}
	return append(sets, &Set{Name: DispatchName(base, v6), V6: v6, Kind: DispatchMap, Elements: f.dispatch})
}

// famChanges collects what rules add to and remove from one family.
type famChanges struct {
	anyAdd, anyRemove []cidr.Range
	groups            map[protoSpan]*rangeChanges
	exact             []countedElement
}

// countedElement is a change of an element's count in the hash set.
type countedElement struct {
	e Element
	n int32
}

type protoSpan struct {
	proto uint8
	span  portSpan
}

type rangeChanges struct{ add, remove []cidr.Range }

func (c *famChanges) collect(contrib *direction, v6 bool, sign int32) {
	for _, r := range contrib.any {
		if r.From.Is6() != v6 {
			continue
		}
		if sign > 0 {
			c.anyAdd = append(c.anyAdd, r)
		} else {
			c.anyRemove = append(c.anyRemove, r)
		}
	}
	for _, it := range contrib.ports {
		for _, r := range it.ranges {
			if r.From.Is6() != v6 {
				continue
			}
			if it.from == it.to && r.From == r.To {
				// A single host on a single port goes to the hash set
				// directly, as in the oracle's concatSets.
				c.exact = append(c.exact, countedElement{Element{Addr: r, Proto: it.proto, PortFrom: it.from, PortTo: it.to}, sign})
				continue
			}
			if c.groups == nil {
				c.groups = map[protoSpan]*rangeChanges{}
			}
			k := protoSpan{it.proto, portSpan{it.from, it.to}}
			g := c.groups[k]
			if g == nil {
				g = &rangeChanges{}
				c.groups[k] = g
			}
			if sign > 0 {
				g.add = append(g.add, r)
			} else {
				g.remove = append(g.remove, r)
			}
		}
	}
}

// apply brings the family's sets up to date with the changes.
func (f *famState) apply(ch *famChanges) {
	if f.any.update(ch.anyAdd, ch.anyRemove) {
		out := make([]Element, len(f.any.merged))
		for i, r := range f.any.merged {
			out[i] = Element{Addr: r}
		}
		if !slices.Equal(out, f.anyOut) {
			f.anyOut = out
		}
	}

	if f.shards == nil {
		f.shards = make([][]Element, f.layout.shards())
	}
	shardAdd, shardRemove := make([][]Element, len(f.shards)), make([][]Element, len(f.shards))
	var spanAdd, spanRemove []Element
	route := func(e Element, added bool) {
		if e.Addr.From == e.Addr.To && e.PortFrom == e.PortTo {
			// A single host on a single port: the hash set, as in the oracle's concatSets.
			n := int32(-1)
			if added {
				n = 1
			}
			ch.exact = append(ch.exact, countedElement{e, n})
			return
		}
		switch s := f.layout.shardOf(e); {
		case s < 0 && added:
			spanAdd = append(spanAdd, e)
		case s < 0:
			spanRemove = append(spanRemove, e)
		case added:
			shardAdd[s] = append(shardAdd[s], e)
		default:
			shardRemove[s] = append(shardRemove[s], e)
		}
	}
	spans := map[uint8][]portSpan{}
	for k, g := range ch.groups {
		if f.protos == nil {
			f.protos = map[uint8]*protoState{}
		}
		ps := f.protos[k.proto]
		if ps == nil {
			ps = &protoState{proto: k.proto, groups: map[portSpan]*coverage{}}
			f.protos[k.proto] = ps
		}
		c := ps.groups[k.span]
		if c == nil {
			c = &coverage{}
			ps.groups[k.span] = c
			ps.index = nil
		}
		if c.update(g.add, g.remove) {
			spans[k.proto] = append(spans[k.proto], k.span)
		}
		if len(c.raw) == 0 {
			delete(ps.groups, k.span)
			ps.index = nil
		}
	}
	for proto, changed := range spans {
		added, removed := f.protos[proto].recompute(changed)
		for _, e := range removed {
			route(e, false)
		}
		for _, e := range added {
			route(e, true)
		}
	}

	f.exact, f.exactN = count(f.exact, f.exactN, ch.exact)
	f.span = patch(f.span, spanAdd, spanRemove)
	for i := range f.shards {
		f.shards[i] = patch(f.shards[i], shardAdd[i], shardRemove[i])
	}
	if !f.laidOut || f.unbalanced() {
		f.relayout()
	}
}

// unbalanced tells whether the layout should be made afresh: a shard that
// can be cut has grown to twice ShardTarget, or the range elements shrank
// to a quarter of what they were when it was made. Between the two, changes
// keep the layout, so a change of a few elements only changes elements.
func (f *famState) unbalanced() bool {
	n := len(f.span)
	for _, s := range f.shards {
		if len(s) > 2*shardTarget && s[0].Addr.From != s[len(s)-1].Addr.From {
			return true
		}
		n += len(s)
	}
	return len(f.shards) > 1 && 4*n < f.laidOutN
}

// relayout lays the range elements out afresh, as Build does.
func (f *famState) relayout() {
	n := len(f.span)
	for _, s := range f.shards {
		n += len(s)
	}
	all := make([]Element, 0, n)
	all = append(all, f.span...)
	for _, s := range f.shards {
		all = append(all, s...)
	}
	slices.SortFunc(all, CompareElements)
	f.layout = layOut(all)
	f.laidOut, f.laidOutN, f.dispatch, f.shardChains = true, n, nil, nil
	f.span, f.shards = f.layout.distribute(all)
}

// count applies changes of counts to elements (sorted by CompareElements)
// and their counts: an element whose count drops to zero goes, one that
// gets a count comes. The elements slice is new if an element came or
// went, the same otherwise, since it may be part of a ruleset handed out;
// the counts are the builder's own.
func count(elements []Element, counts []int32, changes []countedElement) ([]Element, []int32) {
	if len(changes) == 0 {
		return elements, counts
	}
	slices.SortFunc(changes, func(a, b countedElement) int { return CompareElements(a.e, b.e) })
	// Add up the changes of the same element.
	merged := changes[:0]
	for _, c := range changes {
		if n := len(merged); n > 0 && merged[n-1].e == c.e {
			merged[n-1].n += c.n
			continue
		}
		merged = append(merged, c)
	}
	changes = merged
	// Only counts change: no element comes or goes.
	onlyCounts := true
	for _, c := range changes {
		i, found := slices.BinarySearchFunc(elements, c.e, CompareElements)
		if c.n != 0 && (!found || counts[i]+c.n <= 0) {
			onlyCounts = false
			break
		}
	}
	if onlyCounts {
		for _, c := range changes {
			if i, found := slices.BinarySearchFunc(elements, c.e, CompareElements); found {
				counts[i] += c.n
			}
		}
		return elements, counts
	}
	outE := make([]Element, 0, len(elements)+len(changes))
	outN := make([]int32, 0, len(elements)+len(changes))
	i := 0
	for _, c := range changes {
		// Copy up to the change in one go: few changes, many elements.
		j, found := slices.BinarySearchFunc(elements[i:], c.e, CompareElements)
		j += i
		outE, outN = append(outE, elements[i:j]...), append(outN, counts[i:j]...)
		i = j
		n := c.n
		if found {
			n += counts[i]
			i++
		}
		if n > 0 {
			outE, outN = append(outE, c.e), append(outN, n)
		}
	}
	outE, outN = append(outE, elements[i:]...), append(outN, counts[i:]...)
	if len(outE) == 0 {
		return nil, nil
	}
	return outE, outN
}

// patch returns elements (sorted by CompareElements) without remove and with
// add, as a new slice; elements itself when nothing changes, since it may be
// part of a ruleset handed out.
func patch(elements, add, remove []Element) []Element {
	if len(add) == 0 && len(remove) == 0 {
		return elements
	}
	type change struct {
		e     Element
		added bool
	}
	changes := make([]change, 0, len(add)+len(remove))
	for _, e := range add {
		changes = append(changes, change{e, true})
	}
	for _, e := range remove {
		changes = append(changes, change{e, false})
	}
	slices.SortFunc(changes, func(a, b change) int { return CompareElements(a.e, b.e) })
	out := make([]Element, 0, max(0, len(elements)+len(add)-len(remove)))
	i := 0
	for _, c := range changes {
		// Copy up to the change in one go: few changes, many elements.
		j, found := slices.BinarySearchFunc(elements[i:], c.e, CompareElements)
		j += i
		out = append(out, elements[i:j]...)
		i = j
		if found {
			i++ // removed, or added again: kept once below
		}
		if c.added {
			out = append(out, c.e)
		}
	}
	out = append(out, elements[i:]...)
	if len(out) == 0 {
		return nil
	}
	return out
}
