package envoy

import (
	"net/netip"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
)

// Merge returns the union of prefix lists, without prefixes that another one covers, sorted.
func Merge(lists ...[]netip.Prefix) []netip.Prefix {
	var all []netip.Prefix
	for _, l := range lists {
		for _, p := range l {
			if p.IsValid() {
				all = append(all, p.Masked())
			}
		}
	}
	all = validation.SortPrefixes(all)
	// Sorted by address and then length, a prefix covered by another comes right after the
	// last prefix kept, which then covers it: one pass suffices.
	var out []netip.Prefix
	for _, p := range all {
		if n := len(out); n > 0 {
			last := out[n-1]
			if last.Addr().Is4() == p.Addr().Is4() && last.Bits() <= p.Bits() && last.Contains(p.Addr()) {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// Subtract returns the addresses of from that are in none of remove, as prefixes.
// It is how a DENY rule keeps the always-allowed CIDRs reachable.
func Subtract(from, remove []netip.Prefix) []netip.Prefix {
	cur := Merge(from)
	for _, r := range Merge(remove) {
		var next []netip.Prefix
		for _, p := range cur {
			next = append(next, subtractOne(p, r)...)
		}
		cur = next
	}
	return Merge(cur)
}

// subtractOne returns p without r.
func subtractOne(p, r netip.Prefix) []netip.Prefix {
	if p.Addr().Is4() != r.Addr().Is4() || !p.Overlaps(r) {
		return []netip.Prefix{p}
	}
	if r.Bits() <= p.Bits() { // r covers p
		return nil
	}
	// p is larger than r: split p in halves and keep the half without r whole.
	var out []netip.Prefix
	for p.Bits() < r.Bits() {
		lo, hi := halves(p)
		if lo.Contains(r.Addr()) {
			out = append(out, hi)
			p = lo
		} else {
			out = append(out, lo)
			p = hi
		}
	}
	return out
}

// halves splits a prefix into its two sub-prefixes one bit longer.
func halves(p netip.Prefix) (netip.Prefix, netip.Prefix) {
	bits := p.Bits() + 1
	lo := netip.PrefixFrom(p.Addr(), bits)
	b := p.Addr().AsSlice()
	i := p.Bits() / 8
	b[i] |= 0x80 >> (p.Bits() % 8)
	hiAddr, _ := netip.AddrFromSlice(b)
	return lo, netip.PrefixFrom(hiAddr, bits)
}

// Strings renders prefixes.
func Strings(ps []netip.Prefix) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}
