package ruleset

import (
	"slices"
	"sort"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

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

type portSpan struct{ from, to uint16 }

type indexedGroup struct {
	span  portSpan
	c     *coverage
	maxTo uint16
}

// portRun allows addrs (sorted, disjoint, not touching; the builder's own
// slice) on the ports from to to.
type portRun struct {
	from, to uint16
	addrs    []cidr.Range
}

func (r portRun) element(proto uint8, addr cidr.Range) Element {
	return Element{Addr: addr, Proto: proto, PortFrom: r.from, PortTo: r.to}
}

func (r portRun) appendElements(out []Element, proto uint8) []Element {
	for _, addr := range r.addrs {
		out = append(out, r.element(proto, addr))
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

// patchRanges returns ranges (the builder's own, sorted) without remove and
// with add, changed in place when the changes are few.
func patchRanges(ranges, add, remove []cidr.Range) []cidr.Range {
	if len(add)+len(remove) > 16 {
		out := make([]cidr.Range, 0, len(ranges)+len(add)-len(remove))
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
		scratch []cidr.Range
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
		var f []cidr.Range
		switch len(active) {
		case 0:
		case 1:
			f = active[0].c.merged
		default:
			scratch = scratch[:0]
			for _, g := range active {
				scratch = append(scratch, g.c.merged...)
			}
			f = cidr.MergeRanges(scratch)
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
