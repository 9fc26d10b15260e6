package snataddr

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// Address is one SNAT address on the interface its traffic leaves through.
type Address struct {
	Interface string     `json:"interface"`
	Addr      netip.Addr `json:"address"`
}

func (a Address) String() string { return a.Addr.String() + " on " + a.Interface }

// FromRuleset returns the addresses the ruleset's SNAT rules translate to,
// sorted and without duplicates. An address that cannot be a local unicast
// address, or a rule without an interface, is an error naming the rule.
func FromRuleset(rs *ruleset.Ruleset) ([]Address, error) {
	var out []Address
	for _, c := range rs.Chains {
		for _, r := range c.Rules {
			if r.Verdict != ruleset.SNAT {
				continue
			}
			a, err := parse(r.OIfName, r.SNATTo)
			if err != nil {
				return nil, fmt.Errorf("SNAT rule %s: %w", r.ID, err)
			}
			out = append(out, a)
		}
	}
	slices.SortFunc(out, compare)
	return slices.Compact(out), nil
}

func parse(iface, ip string) (Address, error) {
	if iface == "" {
		return Address{}, fmt.Errorf("address %q: no interface to put it on", ip)
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return Address{}, fmt.Errorf("address %q: %w", ip, err)
	}
	if addr.Zone() != "" || !addr.IsGlobalUnicast() {
		return Address{}, fmt.Errorf("address %q: not a unicast address an interface may hold", ip)
	}
	return Address{Interface: iface, Addr: addr.Unmap()}, nil
}

func compare(a, b Address) int {
	if c := strings.Compare(a.Interface, b.Interface); c != 0 {
		return c
	}
	return a.Addr.Compare(b.Addr)
}
