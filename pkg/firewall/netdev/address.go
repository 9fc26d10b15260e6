package netdev

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
)

// Addresses returns the global unicast addresses of the interface, IPv4
// first, each family in the kernel's order (the primary address first).
func Addresses(iface string) ([]netip.Addr, error) {
	link, err := netlink.LinkByName(iface)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", iface, err)
	}
	list, err := netlink.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("addresses of %q: %w", iface, err)
	}
	var out []netip.Addr
	for _, a := range list {
		ip, ok := netip.AddrFromSlice(a.IP)
		if ok && ip.Unmap().IsGlobalUnicast() {
			out = append(out, ip.Unmap())
		}
	}
	slices.SortStableFunc(out, func(x, y netip.Addr) int {
		switch {
		case x.Is4() == y.Is4():
			return 0
		case x.Is4():
			return -1
		}
		return 1
	})
	return out, nil
}
