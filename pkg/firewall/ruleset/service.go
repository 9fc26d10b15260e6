package ruleset

import (
	"net/netip"
	"slices"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// SetServices is the base name of the sets of load balancer addresses and
// ports with the sources allowed to reach them.
const SetServices = "services"

// ServiceAllow allows connections from Sources to one address on one
// protocol and port: a port of a LoadBalancer Service on one of its IPs.
type ServiceAllow struct {
	Addr  netip.Addr
	Proto uint8
	Port  uint16
	// Sources are the allowed clients; none means anyone of Addr's family.
	Sources []cidr.Range
}

// ProtocolNumber returns the number of TCP, UDP or SCTP.
func ProtocolNumber(name string) (uint8, bool) {
	n, ok := protocolNumbers[name]
	return n, ok
}

// serviceSet builds the set of one family: one element per address,
// protocol, port and merged source range. Allows of the same address,
// protocol and port (two Services sharing an IP and port) have their sources
// merged, since the kernel refuses overlapping elements.
func serviceSet(v6 bool, allows []ServiceAllow) *Set {
	type key struct {
		addr  netip.Addr
		proto uint8
		port  uint16
	}
	sources := map[key][]cidr.Range{}
	for _, a := range allows {
		if a.Addr.Is6() != v6 {
			continue
		}
		k := key{a.Addr, a.Proto, a.Port}
		if len(a.Sources) == 0 {
			sources[k] = append(sources[k], everyAddress(v6))
			continue
		}
		for _, r := range a.Sources {
			if r.From.Is6() == v6 {
				sources[k] = append(sources[k], r)
			}
		}
		if _, ok := sources[k]; !ok {
			// Only sources of the other family: nobody of this one.
			sources[k] = nil
		}
	}
	s := &Set{Name: SetName(SetServices, v6), V6: v6, Kind: ServiceSet}
	for k, ranges := range sources {
		for _, r := range cidr.MergeRanges(ranges) {
			s.Elements = append(s.Elements, Element{Addr: cidr.Range{From: k.addr, To: k.addr}, Proto: k.proto, PortFrom: k.port, PortTo: k.port, Src: r})
		}
	}
	slices.SortFunc(s.Elements, CompareElements)
	return s
}

// everyAddress is the range of all addresses of a family.
func everyAddress(v6 bool) cidr.Range {
	if v6 {
		return cidr.RangeOf(netip.PrefixFrom(netip.IPv6Unspecified(), 0))
	}
	return cidr.RangeOf(netip.PrefixFrom(netip.IPv4Unspecified(), 0))
}
