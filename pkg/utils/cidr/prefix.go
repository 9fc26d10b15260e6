// Package cidr is the one place where the extension parses networks and
// computes with them: the ACL's allowed and denied prefixes, the firewall's
// address ranges for nftables interval sets, the validation of both APIs.
package cidr

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
)

// Parse parses an IPv4 or IPv6 network such as 10.0.0.0/8 and returns it
// masked, as metal-stack's and stackit's ACL extensions do: 10.1.2.3/8 is
// 10.0.0.0/8. A bare address, an IPv4-mapped IPv6 network (it would silently
// match nothing) and a zone are refused.
func Parse(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		if len(s) > 64 {
			return netip.Prefix{}, errors.New("not a CIDR (want e.g. 10.0.0.0/8 or 2001:db8::/32)")
		}
		return netip.Prefix{}, fmt.Errorf("not a CIDR (want e.g. 10.0.0.0/8 or 2001:db8::/32): %w", err)
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, errors.New("IPv4-mapped IPv6 prefixes are not supported, write the IPv4 prefix")
	}
	if p.Addr().Zone() != "" {
		return netip.Prefix{}, errors.New("a CIDR has no zone")
	}
	return p.Masked(), nil
}

// Sort sorts prefixes (IPv4 first, then by address and length) and drops duplicates.
func Sort(ps []netip.Prefix) []netip.Prefix {
	out := slices.Clone(ps)
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out)
}

// Merge returns the union of prefix lists without prefixes that another one
// covers, sorted. Touching prefixes stay apart, as users wrote them.
func Merge(lists ...[]netip.Prefix) []netip.Prefix {
	var all []netip.Prefix
	for _, l := range lists {
		for _, p := range l {
			if p.IsValid() {
				all = append(all, p.Masked())
			}
		}
	}
	all = Sort(all)
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

// Subtract returns the addresses of from that are in none of remove, as the
// fewest prefixes. It is how a DENY rule keeps the always-allowed CIDRs reachable.
func Subtract(from, remove []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, r := range SubtractRanges(ranges(from), ranges(remove)) {
		out = append(out, r.Prefixes()...)
	}
	return out
}

func ranges(ps []netip.Prefix) []Range {
	var out []Range
	for _, p := range ps {
		if p.IsValid() {
			out = append(out, RangeOf(p))
		}
	}
	return MergeRanges(out)
}

// Strings renders prefixes.
func Strings(ps []netip.Prefix) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}
