package ruleset

import (
	"slices"
	"sort"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// coverage is the union of a multiset of address ranges of one family, kept
// up to date as ranges come and go: adding or removing one range touches
// only the merged ranges around it, not the whole list.
type coverage struct {
	// raw are the distinct ranges with how often each was added, sorted by
	// compareRanges.
	raw []counted
	// merged is Merge(raw): sorted, disjoint, not touching.
	merged []cidr.Range
}

type counted struct {
	cidr.Range
	n int32
}

func compareRanges(a, b cidr.Range) int {
	if c := a.From.Compare(b.From); c != 0 {
		return c
	}
	return a.To.Compare(b.To)
}

// apart tells whether a ends before b starts without touching it.
func apart(a, b cidr.Range) bool {
	next := a.To.Next()
	return next.IsValid() && next.Less(b.From)
}

// update adds and removes ranges; each removed range must have been added
// before. It reports whether the distinct ranges changed (the union may
// still be the same). Many changes at once rebuild the lists in one sort;
// a few are applied one by one.
func (c *coverage) update(add, remove []cidr.Range) bool {
	n := len(add) + len(remove)
	if n == 0 {
		return false
	}
	if n > 16 && n*16 > len(c.raw) {
		return c.rebuild(add, remove)
	}
	changed := false
	for _, r := range remove {
		changed = c.remove(r) || changed
	}
	for _, r := range add {
		changed = c.add(r) || changed
	}
	return changed
}

func (c *coverage) find(r cidr.Range) (int, bool) {
	return slices.BinarySearchFunc(c.raw, r, func(x counted, t cidr.Range) int { return compareRanges(x.Range, t) })
}

func (c *coverage) add(r cidr.Range) bool {
	i, found := c.find(r)
	if found {
		c.raw[i].n++
		return false
	}
	c.raw = slices.Insert(c.raw, i, counted{Range: r, n: 1})
	m := c.merged
	// m[lo:hi] are the merged ranges r overlaps or touches.
	lo := sort.Search(len(m), func(k int) bool { return !apart(m[k], r) })
	hi := sort.Search(len(m), func(k int) bool { return apart(r, m[k]) })
	joined := r
	if lo < hi {
		if m[lo].From.Less(joined.From) {
			joined.From = m[lo].From
		}
		if joined.To.Less(m[hi-1].To) {
			joined.To = m[hi-1].To
		}
	}
	c.merged = slices.Replace(c.merged, lo, hi, joined)
	return true
}

func (c *coverage) remove(r cidr.Range) bool {
	i, found := c.find(r)
	if !found {
		return false
	}
	if c.raw[i].n > 1 {
		c.raw[i].n--
		return false
	}
	c.raw = slices.Delete(c.raw, i, i+1)
	// The merged range that held r is merged again from the raw ranges
	// that start inside it: exactly those that made it up.
	k := sort.Search(len(c.merged), func(k int) bool { return !c.merged[k].To.Less(r.From) })
	held := c.merged[k]
	a := sort.Search(len(c.raw), func(j int) bool { return !c.raw[j].From.Less(held.From) })
	b := sort.Search(len(c.raw), func(j int) bool { return held.To.Less(c.raw[j].From) })
	c.merged = slices.Replace(c.merged, k, k+1, mergeCounted(c.raw[a:b])...)
	return true
}

// rebuild applies many changes in one pass: sort the changes, merge them
// into the counts, merge the union again.
func (c *coverage) rebuild(add, remove []cidr.Range) bool {
	changes := make([]counted, 0, len(c.raw)+len(add)+len(remove))
	changes = append(changes, c.raw...)
	for _, r := range add {
		changes = append(changes, counted{Range: r, n: 1})
	}
	for _, r := range remove {
		changes = append(changes, counted{Range: r, n: -1})
	}
	slices.SortFunc(changes, func(a, b counted) int { return compareRanges(a.Range, b.Range) })
	raw := changes[:0]
	for _, ch := range changes {
		if len(raw) > 0 && raw[len(raw)-1].Range == ch.Range {
			raw[len(raw)-1].n += ch.n
			continue
		}
		if len(raw) > 0 && raw[len(raw)-1].n <= 0 {
			raw = raw[:len(raw)-1]
		}
		raw = append(raw, ch)
	}
	if len(raw) > 0 && raw[len(raw)-1].n <= 0 {
		raw = raw[:len(raw)-1]
	}
	changed := len(raw) != len(c.raw)
	if !changed {
		for i := range raw {
			if raw[i].Range != c.raw[i].Range {
				changed = true
				break
			}
		}
	}
	c.raw = slices.Clip(raw)
	if changed {
		c.merged = mergeCounted(c.raw)
	}
	return changed
}

// mergeCounted merges ranges sorted by compareRanges: Merge without the sort.
func mergeCounted(raw []counted) []cidr.Range {
	var out []cidr.Range
	for _, r := range raw {
		if len(out) > 0 && !apart(out[len(out)-1], r.Range) {
			if last := &out[len(out)-1]; last.To.Less(r.To) {
				last.To = r.To
			}
			continue
		}
		out = append(out, r.Range)
	}
	return out
}
