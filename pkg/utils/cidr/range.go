package cidr

import (
	"net/netip"
	"slices"
)

// Range is an inclusive range of addresses of one family, From <= To.
type Range struct {
	From, To netip.Addr
}

// RangeOf returns the addresses of a network.
func RangeOf(p netip.Prefix) Range {
	p = p.Masked()
	from := p.Addr()
	b := from.AsSlice()
	hostBits := len(b)*8 - p.Bits()
	for i := len(b) - 1; i >= 0 && hostBits > 0; i-- {
		n := min(hostBits, 8)
		b[i] |= byte(1<<n - 1)
		hostBits -= n
	}
	to, _ := netip.AddrFromSlice(b)
	return Range{From: from, To: to}
}

// Is4 tells whether the range holds IPv4 addresses.
func (r Range) Is4() bool { return r.From.Is4() }

// Prefix returns the network the range is exactly, if it is one.
func (r Range) Prefix() (netip.Prefix, bool) {
	for bits := 0; bits <= r.From.BitLen(); bits++ {
		p := netip.PrefixFrom(r.From, bits)
		if p.Masked().Addr() != r.From {
			continue
		}
		if RangeOf(p) == r {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// String prints the range as nft does: a network, an address or from-to.
func (r Range) String() string {
	if r.From == r.To {
		return r.From.String()
	}
	if p, ok := r.Prefix(); ok {
		return p.String()
	}
	return r.From.String() + "-" + r.To.String()
}

// MergeRanges sorts ranges and joins those that overlap or touch, because the kernel
// refuses overlapping elements in an interval set. The input is not modified.
func MergeRanges(ranges []Range) []Range {
	if len(ranges) == 0 {
		return nil
	}
	sorted := slices.Clone(ranges)
	slices.SortFunc(sorted, func(a, b Range) int {
		if c := a.From.Compare(b.From); c != 0 {
			return c
		}
		return a.To.Compare(b.To)
	})
	out := sorted[:1]
	for _, r := range sorted[1:] {
		last := &out[len(out)-1]
		// Touching means r starts right after last ends; ranges of different
		// families never touch because IPv4 sorts before IPv6.
		if r.From.Is4() == last.From.Is4() && (r.From.Compare(last.To) <= 0 || r.From == last.To.Next()) {
			if r.To.Compare(last.To) > 0 {
				last.To = r.To
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// SubtractRanges removes the addresses of cut from ranges. Both must be merged
// (sorted, disjoint); so is the result.
func SubtractRanges(ranges, cut []Range) []Range {
	var out []Range
	j := 0
	for _, r := range ranges {
		cur := r
		keep := true
		for j < len(cut) && cut[j].To.Compare(cur.From) < 0 {
			j++
		}
		for k := j; k < len(cut) && cut[k].From.Compare(cur.To) <= 0; k++ {
			c := cut[k]
			if c.From.Is4() != cur.From.Is4() {
				continue
			}
			if c.From.Compare(cur.From) > 0 {
				out = append(out, Range{From: cur.From, To: c.From.Prev()})
			}
			if c.To.Compare(cur.To) >= 0 {
				keep = false
				break
			}
			cur.From = c.To.Next()
		}
		if keep {
			out = append(out, cur)
		}
	}
	return out
}

// Prefixes returns the fewest networks that hold exactly the range's addresses.
func (r Range) Prefixes() []netip.Prefix {
	var out []netip.Prefix
	from := r.From
	for {
		// The largest network that starts at from and ends within the range.
		bits := from.BitLen()
		for bits > 0 {
			p := netip.PrefixFrom(from, bits-1)
			if p.Masked().Addr() != from || RangeOf(p).To.Compare(r.To) > 0 {
				break
			}
			bits--
		}
		p := netip.PrefixFrom(from, bits)
		out = append(out, p)
		end := RangeOf(p).To
		if end.Compare(r.To) >= 0 {
			return out
		}
		from = end.Next()
	}
}
