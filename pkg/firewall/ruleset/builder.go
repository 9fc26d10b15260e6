package ruleset

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Builder builds the same rulesets as Build, but remembers what it built:
// the next Build parses only the policy rules that changed, and recomputes
// only the set elements those rules can affect. A one-CIDR change among
// 20,000 policy items thus costs a few milliseconds instead of a rebuild of
// 80,000 elements. Sets whose elements did not change keep the very same
// slice, so the programmer sees at a glance that nothing is to be done.
//
// A Build that fails leaves the Builder as it was. The rulesets it returns
// are never modified afterwards. A Builder is not safe for concurrent use;
// the zero value is ready.
type Builder struct {
	dirs [2]dirState // egress, ingress
	// last is the ruleset of the last successful Build, whose unchanged set
	// slices the next one reuses.
	last *Ruleset
}

const (
	egressDir  = 0
	ingressDir = 1
)

// dirState is what the builder knows about one direction.
type dirState struct {
	// rules are the policy rules of the direction in input order, each with
	// what it contributes.
	rules []ruleEntry
	fams  [2]famState // IPv4, IPv6
}

// ruleEntry is one policy rule (a copy: the caller may change its input)
// and its parsed contribution.
type ruleEntry struct {
	blocks  []fwv1alpha1.IPBlock
	ports   []portCopy
	contrib direction
}

// portCopy is a PolicyPort without pointers.
type portCopy struct {
	protocol        string
	port, endPort   int32
	hasPort, hasEnd bool
}

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

// protoState is the address . port-range decomposition of one protocol.
type protoState struct {
	proto uint8
	// groups are the addresses of the rules with the same port range.
	groups map[portSpan]*coverage
	// index lists the groups sorted by port, with the highest end of any
	// group up to each; nil after groups came or went.
	index []indexedGroup
	// runs is the decomposition as boxes computes it: the maximal runs of
	// ports over which the allowed addresses are the same and not none,
	// each with those addresses merged, sorted by port. Its elements are
	// each run's address ranges on the run's ports.
	runs []portRun
}

// portRun allows addrs (sorted, disjoint, not touching; the builder's own
// slice) on the ports from to to.
type portRun struct {
	from, to uint16
	addrs    []Range
}

func (r portRun) element(proto uint8, addr Range) Element {
	return Element{Addr: addr, Proto: proto, PortFrom: r.from, PortTo: r.to}
}

type portSpan struct{ from, to uint16 }

type indexedGroup struct {
	span  portSpan
	c     *coverage
	maxTo uint16
}

// Build returns the ruleset for the inputs, as Build does.
func (b *Builder) Build(fw *fwv1alpha1.FirewallTrafficSpec, policies []*fwv1alpha1.PolicySpec, services []ServiceAllow) (*Ruleset, error) {
	internal, chains, err := firewallParts(fw)
	if err != nil {
		return nil, err
	}
	var egress, ingress int
	for _, spec := range policies {
		if spec != nil {
			egress, ingress = egress+len(spec.Egress), ingress+len(spec.Ingress)
		}
	}
	views := [2][]ruleView{make([]ruleView, 0, egress), make([]ruleView, 0, ingress)}
	for _, spec := range policies {
		if spec == nil {
			continue
		}
		for i := range spec.Egress {
			views[egressDir] = append(views[egressDir], ruleView{spec.Egress[i].To, spec.Egress[i].Ports})
		}
		for i := range spec.Ingress {
			views[ingressDir] = append(views[ingressDir], ruleView{spec.Ingress[i].From, spec.Ingress[i].Ports})
		}
	}
	// Plan both directions first: a rule that does not parse fails the
	// Build before anything changed.
	var plans [2]dirPlan
	for d := range b.dirs {
		if plans[d], err = b.dirs[d].plan(views[d]); err != nil {
			return nil, err
		}
	}
	for d := range b.dirs {
		b.dirs[d].commit(plans[d])
	}

	rs := &Ruleset{Table: TableName, Chains: chains}
	for f, v6 := range []bool{false, true} {
		rs.Chains = append(rs.Chains, b.dirs[egressDir].fams[f].chains(SetEgress, v6)...)
		rs.Chains = append(rs.Chains, b.dirs[ingressDir].fams[f].chains(SetIngress, v6)...)
	}
	for _, v6 := range []bool{false, true} {
		f := famIndex(v6)
		eg, in := &b.dirs[egressDir].fams[f], &b.dirs[ingressDir].fams[f]
		rs.Sets = append(rs.Sets, b.reuse(addrSet(SetName(SetInternal, v6), v6, internal)))
		rs.Sets = append(rs.Sets, eg.concatSets(SetEgress, v6)...)
		rs.Sets = append(rs.Sets, &Set{Name: SetName(SetEgressAny, v6), V6: v6, Kind: AddrSet, Elements: eg.anyOut})
		rs.Sets = append(rs.Sets, in.concatSets(SetIngress, v6)...)
		rs.Sets = append(rs.Sets, &Set{Name: SetName(SetIngressAny, v6), V6: v6, Kind: AddrSet, Elements: in.anyOut})
		rs.Sets = append(rs.Sets, b.reuse(serviceSet(v6, services)))
	}
	b.last = rs
	return rs, nil
}

// reuse returns s with the elements slice of the last ruleset's set of the
// same name when they are equal.
func (b *Builder) reuse(s *Set) *Set {
	if b.last == nil {
		return s
	}
	if old := b.last.Set(s.Name); old != nil && slices.Equal(old.Elements, s.Elements) {
		s.Elements = old.Elements
	}
	return s
}

func famIndex(v6 bool) int {
	if v6 {
		return 1
	}
	return 0
}

// chains returns the shard chains of base and the family, as layoutChains
// does.
func (f *famState) chains(base string, v6 bool) []*Chain {
	if f.shardChains == nil {
		f.shardChains = shardChains(base, v6, f.layout)
	}
	return f.shardChains
}

// concatSets returns the sets of base and the family as concatSets in
// build.go does: the hash set, the span set, the shards and the verdict map.
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

// ruleView is a policy rule of the input: its peers and ports.
type ruleView struct {
	blocks []fwv1alpha1.IPBlock
	ports  []fwv1alpha1.PolicyPort
}

// dirPlan says how the rules of a direction change: the first prefix and
// the last suffix rules stay, the rules between are replaced by middle.
type dirPlan struct {
	prefix, suffix int
	middle         []ruleEntry
	// added are the middle entries that are new, removed the old ones
	// between prefix and suffix that are gone.
	added, removed []ruleEntry
}

// plan compares the new rules with the old ones by content: rules that
// stay in place are found by comparing from both ends (an edit, insertion
// or removal of a few rules leaves the others in place), the rest by a key
// of their content (rules that moved). Only new rules are parsed.
func (d *dirState) plan(views []ruleView) (dirPlan, error) {
	old := d.rules
	var p dirPlan
	for p.prefix < len(old) && p.prefix < len(views) && old[p.prefix].equal(views[p.prefix]) {
		p.prefix++
	}
	for p.suffix < len(old)-p.prefix && p.suffix < len(views)-p.prefix &&
		old[len(old)-1-p.suffix].equal(views[len(views)-1-p.suffix]) {
		p.suffix++
	}
	oldMiddle := old[p.prefix : len(old)-p.suffix]
	newMiddle := views[p.prefix : len(views)-p.suffix]
	var moved map[string][]int
	if len(oldMiddle) > 0 && len(newMiddle) > 0 {
		moved = make(map[string][]int, len(oldMiddle))
		for i := range oldMiddle {
			k := ruleKey(oldMiddle[i].blocks, oldMiddle[i].ports, nil)
			moved[k] = append(moved[k], i)
		}
	}
	kept := make([]bool, len(oldMiddle))
	p.middle = make([]ruleEntry, 0, len(newMiddle))
	for _, v := range newMiddle {
		if moved != nil {
			k := ruleKey(v.blocks, nil, v.ports)
			if idx := moved[k]; len(idx) > 0 {
				moved[k] = idx[1:]
				kept[idx[0]] = true
				p.middle = append(p.middle, oldMiddle[idx[0]])
				continue
			}
		}
		e := ruleEntry{blocks: copyBlocks(v.blocks), ports: copyPorts(v.ports)}
		if err := e.contrib.add(v.blocks, v.ports); err != nil {
			return dirPlan{}, err
		}
		p.middle = append(p.middle, e)
		p.added = append(p.added, e)
	}
	for i, k := range kept {
		if !k {
			p.removed = append(p.removed, oldMiddle[i])
		}
	}
	return p, nil
}

// commit applies a plan: the contributions of removed rules go, those of
// added rules come, and the sets are brought up to date.
func (d *dirState) commit(p dirPlan) {
	d.rules = slices.Replace(d.rules, p.prefix, len(d.rules)-p.suffix, p.middle...)
	if len(p.added) == 0 && len(p.removed) == 0 {
		return
	}
	for f := range d.fams {
		var ch famChanges
		for _, e := range p.removed {
			ch.collect(&e.contrib, f == 1, -1)
		}
		for _, e := range p.added {
			ch.collect(&e.contrib, f == 1, +1)
		}
		d.fams[f].apply(&ch)
	}
}

// famChanges collects what rules add to and remove from one family.
type famChanges struct {
	anyAdd, anyRemove []Range
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

type rangeChanges struct{ add, remove []Range }

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
				// directly, as in concatSets.
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
			// A single host on a single port: the hash set, as in concatSets.
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

// recompute brings the decomposition up to date after the groups of the
// changed port spans changed, and returns the elements that came and went.
//
// The decomposition is, for each maximal run of ports over which the set of
// allowed addresses f(port) is the same (and not empty), the merged ranges
// of that set. A change of the groups on ports [a, b] changes f only there,
// so only runs that touch [a-1, b+1] can change: the window from the start
// of the run holding a-1 to the end of the run holding b+1 is computed
// again from the groups, and its runs replace the old ones. Outside the
// window f is the same and its runs end where they ended, so no run crosses
// the window's edges, before or after.
func (p *protoState) recompute(changed []portSpan) (added, removed []Element) {
	slices.SortFunc(changed, func(x, y portSpan) int { return int(x.from) - int(y.from) })
	var windows []portSpan
	for _, c := range mergeSpans(changed) {
		w := c
		if w.from > 0 {
			if run, ok := p.runAt(w.from - 1); ok {
				w.from = run.from
			}
		}
		if w.to < 65535 {
			if run, ok := p.runAt(w.to + 1); ok {
				w.to = run.to
			}
		}
		windows = append(windows, w)
	}
	windows = mergeSpans(windows)
	// The runs of each window are replaced; the others stay. One pass over
	// the runs, however many windows.
	runs := make([]portRun, 0, len(p.runs))
	prev := 0
	for _, w := range windows {
		start := sort.Search(len(p.runs), func(k int) bool { return p.runs[k].from >= w.from })
		end := sort.Search(len(p.runs), func(k int) bool { return p.runs[k].from > w.to })
		fresh := p.compute(w)
		// Both lists are sorted by port: a run on the same ports as before
		// changes by the difference of its addresses (often one range of
		// thousands), any other run goes or comes as a whole.
		j := 0
		for _, o := range p.runs[start:end] {
			for j < len(fresh) && fresh[j].from < o.from {
				added = fresh[j].appendElements(added, p.proto)
				fresh[j].addrs = slices.Clone(fresh[j].addrs)
				j++
			}
			if j < len(fresh) && fresh[j].from == o.from && fresh[j].to == o.to {
				a, r := diffSorted(o.addrs, fresh[j].addrs, compareRanges)
				for _, addr := range a {
					added = append(added, o.element(p.proto, addr))
				}
				for _, addr := range r {
					removed = append(removed, o.element(p.proto, addr))
				}
				fresh[j].addrs = patchRanges(o.addrs, a, r)
				j++
				continue
			}
			removed = o.appendElements(removed, p.proto)
		}
		for ; j < len(fresh); j++ {
			added = fresh[j].appendElements(added, p.proto)
			fresh[j].addrs = slices.Clone(fresh[j].addrs)
		}
		runs = append(append(runs, p.runs[prev:start]...), fresh...)
		prev = end
	}
	p.runs = append(runs, p.runs[prev:]...)
	return added, removed
}

// mergeSpans joins spans (sorted by start) that overlap or touch.
func mergeSpans(spans []portSpan) []portSpan {
	var out []portSpan
	for _, s := range spans {
		if n := len(out); n > 0 && uint32(s.from) <= uint32(out[n-1].to)+1 {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

func (r portRun) appendElements(out []Element, proto uint8) []Element {
	for _, addr := range r.addrs {
		out = append(out, r.element(proto, addr))
	}
	return out
}

// patchRanges returns ranges (the builder's own, sorted) without remove and
// with add, changed in place when the changes are few.
func patchRanges(ranges, add, remove []Range) []Range {
	if len(add)+len(remove) > 16 {
		out := make([]Range, 0, len(ranges)+len(add)-len(remove))
		a, r := 0, 0
		for _, x := range ranges {
			for a < len(add) && compareRanges(add[a], x) < 0 {
				out = append(out, add[a])
				a++
			}
			if r < len(remove) && remove[r] == x {
				r++
				continue
			}
			out = append(out, x)
		}
		return append(out, add[a:]...)
	}
	for _, x := range remove {
		if i, found := slices.BinarySearchFunc(ranges, x, compareRanges); found {
			ranges = slices.Delete(ranges, i, i+1)
		}
	}
	for _, x := range add {
		i, _ := slices.BinarySearchFunc(ranges, x, compareRanges)
		ranges = slices.Insert(ranges, i, x)
	}
	return ranges
}

// runAt returns the ports of the run that holds port, if any address is
// allowed on it.
func (p *protoState) runAt(port uint16) (portSpan, bool) {
	k := sort.Search(len(p.runs), func(k int) bool { return p.runs[k].from > port })
	if k == 0 || p.runs[k-1].to < port {
		return portSpan{}, false
	}
	return portSpan{p.runs[k-1].from, p.runs[k-1].to}, true
}

// sortedGroups returns the index of the groups, made anew if groups came or
// went since the last call.
func (p *protoState) sortedGroups() []indexedGroup {
	if p.index != nil || len(p.groups) == 0 {
		return p.index
	}
	p.index = make([]indexedGroup, 0, len(p.groups))
	for s, c := range p.groups {
		p.index = append(p.index, indexedGroup{span: s, c: c})
	}
	slices.SortFunc(p.index, func(a, b indexedGroup) int {
		if a.span.from != b.span.from {
			return int(a.span.from) - int(b.span.from)
		}
		return int(a.span.to) - int(b.span.to)
	})
	var maxTo uint16
	for i := range p.index {
		maxTo = max(maxTo, p.index[i].span.to)
		p.index[i].maxTo = maxTo
	}
	return p.index
}

// compute returns the runs of the ports in w, as boxes does: the ports are
// cut at every group's edges into segments, each segment gets the union of
// the groups covering it, and neighbouring segments with the same union are
// joined again. The runs' addresses may be a group's own: not to be kept.
func (p *protoState) compute(w portSpan) []portRun {
	type group struct {
		from, to uint32
		c        *coverage
	}
	var groups []group
	bounds := []uint32{uint32(w.from), uint32(w.to) + 1}
	// The groups that overlap w: those that start up to w's end, looked at
	// from there back until none before reaches w.
	index := p.sortedGroups()
	for i := sort.Search(len(index), func(k int) bool { return index[k].span.from > w.to }) - 1; i >= 0 && index[i].maxTo >= w.from; i-- {
		s, c := index[i].span, index[i].c
		if s.to < w.from || len(c.merged) == 0 {
			continue
		}
		g := group{from: uint32(max(s.from, w.from)), to: uint32(min(s.to, w.to)), c: c}
		groups = append(groups, g)
		bounds = append(bounds, g.from, g.to+1)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	slices.SortFunc(groups, func(a, b group) int { return int(a.from) - int(b.from) })

	var (
		runs    []portRun
		active  []group
		next    int
		scratch []Range
		// gap tells whether the last segment allowed nothing: a run must
		// not join the one before a gap.
		gap = true
	)
	for k := 0; k+1 < len(bounds); k++ {
		seg, end := bounds[k], bounds[k+1]-1
		active = slices.DeleteFunc(active, func(g group) bool { return g.to < seg })
		for next < len(groups) && groups[next].from <= seg {
			active = append(active, groups[next])
			next++
		}
		var f []Range
		switch len(active) {
		case 0:
		case 1:
			f = active[0].c.merged
		default:
			scratch = scratch[:0]
			for _, g := range active {
				scratch = append(scratch, g.c.merged...)
			}
			f = Merge(scratch)
		}
		switch n := len(runs); {
		case len(f) == 0:
			gap = true
		case !gap && slices.Equal(f, runs[n-1].addrs):
			runs[n-1].to = uint16(end)
		default:
			runs = append(runs, portRun{from: uint16(seg), to: uint16(end), addrs: f})
			gap = false
		}
	}
	return runs
}

func (e *ruleEntry) equal(v ruleView) bool {
	if len(e.blocks) != len(v.blocks) || len(e.ports) != len(v.ports) {
		return false
	}
	for i := range e.blocks {
		if e.blocks[i].CIDR != v.blocks[i].CIDR || !slices.Equal(e.blocks[i].Except, v.blocks[i].Except) {
			return false
		}
	}
	for i := range e.ports {
		if e.ports[i] != copyPort(v.ports[i]) {
			return false
		}
	}
	return true
}

// ruleKey is the content of a rule as a string; the ports come either as
// copies or as the input's.
func ruleKey(blocks []fwv1alpha1.IPBlock, copies []portCopy, ports []fwv1alpha1.PolicyPort) string {
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.CIDR)
		for _, e := range bl.Except {
			b.WriteString("-" + e)
		}
		b.WriteString(",")
	}
	b.WriteString("|")
	for _, p := range ports {
		copies = append(copies, copyPort(p))
	}
	for _, p := range copies {
		b.WriteString(p.protocol)
		for _, n := range []struct {
			v   int32
			set bool
		}{{p.port, p.hasPort}, {p.endPort, p.hasEnd}} {
			b.WriteString(":")
			if n.set {
				b.WriteString(strconv.Itoa(int(n.v)))
			}
		}
		b.WriteString(",")
	}
	return b.String()
}

// copyBlocks copies blocks; strings are immutable, so only the slices are.
func copyBlocks(in []fwv1alpha1.IPBlock) []fwv1alpha1.IPBlock {
	out := slices.Clone(in)
	for i := range out {
		out[i].Except = slices.Clone(out[i].Except)
	}
	return out
}

func copyPorts(in []fwv1alpha1.PolicyPort) []portCopy {
	out := make([]portCopy, len(in))
	for i, p := range in {
		out[i] = copyPort(p)
	}
	return out
}

func copyPort(p fwv1alpha1.PolicyPort) portCopy {
	c := portCopy{protocol: p.Protocol}
	if p.Port != nil {
		c.port, c.hasPort = *p.Port, true
	}
	if p.EndPort != nil {
		c.endPort, c.hasEnd = *p.EndPort, true
	}
	return c
}
