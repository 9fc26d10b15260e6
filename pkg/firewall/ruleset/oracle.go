package ruleset

import (
	"slices"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// Build turns the firewall's traffic spec and the network policies into the
// desired ruleset, from scratch. It expects validated input and fails on what
// it cannot parse.
//
// Build is the oracle of the incremental Builder: it computes every set in one
// straightforward pass (parse, cut the port axis into boxes, lay out shards),
// and the Builder's tests require the Builder to build exactly what Build
// builds after any sequence of changes. It is also what builds a ruleset once
// (agent.Desired, the render command), where remembering state buys nothing.
//
// The forward chain has a fixed number of rules; the policies only fill the
// sets. A policy rule without ports allows every protocol and port.
//
// services allow their sources to load balancer addresses and ports (the
// shoot's LoadBalancer Services), whether those are internal or not.
func Build(fw *fwv1alpha1.FirewallTrafficSpec, policies []*fwv1alpha1.PolicySpec, services []ServiceAllow) (*Ruleset, error) {
	return buildWith(fw, policies, services, [2][2]*shardLayout{})
}

// buildWith builds as Build does, with the given shard layouts (by direction
// and family) where they are not nil and fresh ones elsewhere.
func buildWith(fw *fwv1alpha1.FirewallTrafficSpec, policies []*fwv1alpha1.PolicySpec, services []ServiceAllow, layouts [2][2]*shardLayout) (*Ruleset, error) {
	internal, chains, err := firewallParts(fw)
	if err != nil {
		return nil, err
	}

	var egress, ingress direction
	for _, spec := range policies {
		if spec == nil {
			continue
		}
		for _, rule := range spec.Egress {
			if err := egress.add(rule.To, rule.Ports); err != nil {
				return nil, err
			}
		}
		for _, rule := range spec.Ingress {
			if err := ingress.add(rule.From, rule.Ports); err != nil {
				return nil, err
			}
		}
	}

	rs := &Ruleset{Table: TableName, Chains: chains}
	var used [2][2]shardLayout
	for f, v6 := range []bool{false, true} {
		egressSets, egressLayout := concatSets(SetEgress, v6, egress.ports, layouts[egressDir][f])
		ingressSets, ingressLayout := concatSets(SetIngress, v6, ingress.ports, layouts[ingressDir][f])
		used[egressDir][f], used[ingressDir][f] = egressLayout, ingressLayout
		rs.Sets = append(rs.Sets, addrSet(SetName(SetInternal, v6), v6, internal))
		rs.Sets = append(rs.Sets, egressSets...)
		rs.Sets = append(rs.Sets, addrSet(SetName(SetEgressAny, v6), v6, cidr.MergeRanges(egress.any)))
		rs.Sets = append(rs.Sets, ingressSets...)
		rs.Sets = append(rs.Sets, addrSet(SetName(SetIngressAny, v6), v6, cidr.MergeRanges(ingress.any)))
		rs.Sets = append(rs.Sets, serviceSet(v6, services))
	}
	rs.Chains = append(rs.Chains, layoutChains(used)...)
	fqdnSets, fqdnChains, jumps, fqdnBindings, err := fqdnParts(policies)
	if err != nil {
		return nil, err
	}
	withFQDN(rs, fqdnSets, fqdnChains, jumps, fqdnBindings)
	return rs, nil
}

// concatSets puts single address . proto . port elements (a host on a port,
// the most common policy item) into a hash set, which the kernel changes in
// constant time, and the ranges into shards by address (see shardLayout),
// laid out afresh when layout is nil. Single hosts on single ports bypass the
// range arithmetic: they may overlap ranges freely, since they live in
// another set, and a change among them is cheap to compute as well as to
// apply.
func concatSets(base string, v6 bool, items []portItem, layout *shardLayout) ([]*Set, shardLayout) {
	var exact []Element
	rest := make([]portItem, 0, len(items))
	for _, it := range items {
		var ranges []cidr.Range
		for _, r := range it.ranges {
			switch {
			case r.From.Is6() != v6:
			case it.from == it.to && r.From == r.To:
				exact = append(exact, Element{Addr: r, Proto: it.proto, PortFrom: it.from, PortTo: it.to})
			default:
				ranges = append(ranges, r)
			}
		}
		if len(ranges) > 0 {
			it.ranges = ranges
			rest = append(rest, it)
		}
	}
	elems := boxes(rest, v6)
	ranges := make([]Element, 0, len(elems))
	for _, e := range elems {
		if e.Addr.From == e.Addr.To && e.PortFrom == e.PortTo {
			exact = append(exact, e)
			continue
		}
		ranges = append(ranges, e)
	}
	slices.SortFunc(ranges, CompareElements)
	slices.SortFunc(exact, CompareElements)
	exact = slices.CompactFunc(exact, func(a, b Element) bool { return a == b })
	l := layOut(ranges)
	if layout != nil {
		l = *layout
	}
	return append([]*Set{{Name: ExactName(base, v6), V6: v6, Kind: AddrProtoPortExactSet, Elements: exact}},
		shardedSets(base, v6, l, ranges)...), l
}

// layoutChains returns the shard chains of both directions and families.
func layoutChains(layouts [2][2]shardLayout) []*Chain {
	var chains []*Chain
	for fam, v6 := range []bool{false, true} {
		chains = append(chains, shardChains(SetEgress, v6, layouts[egressDir][fam])...)
		chains = append(chains, shardChains(SetIngress, v6, layouts[ingressDir][fam])...)
	}
	return chains
}

// boxes turns port items into disjoint address . proto . port-range elements.
// The kernel refuses overlapping elements, and items overlap freely (two
// policies may open 80-90 and 85-100 to overlapping networks), so per protocol
// the port axis is cut at every item's boundaries into segments, each segment
// gets the merged addresses of the items covering it, and neighbouring
// segments with the same addresses are joined again.
func boxes(items []portItem, v6 bool) []Element {
	byProto := map[uint8][]portItem{}
	for _, it := range items {
		var ranges []cidr.Range
		for _, r := range it.ranges {
			if r.From.Is6() == v6 {
				ranges = append(ranges, r)
			}
		}
		if len(ranges) > 0 {
			it.ranges = ranges
			byProto[it.proto] = append(byProto[it.proto], it)
		}
	}
	protos := make([]uint8, 0, len(byProto))
	for proto := range byProto {
		protos = append(protos, proto)
	}
	slices.Sort(protos)
	// The output is ordered by protocol, port and address without a sort.
	out := make([]Element, 0, len(items))
	for _, proto := range protos {
		its := byProto[proto]
		bounds := make([]uint32, 0, 2*len(its))
		for _, it := range its {
			bounds = append(bounds, uint32(it.from), uint32(it.to)+1)
		}
		slices.Sort(bounds)
		bounds = slices.Compact(bounds)
		// Two passes, counting first, so that all segments share one array.
		spans := make([][2]int, len(its))
		counts := make([]int, len(bounds))
		for i, it := range its {
			first, _ := slices.BinarySearch(bounds, uint32(it.from))
			last, _ := slices.BinarySearch(bounds, uint32(it.to)+1)
			spans[i] = [2]int{first, last}
			for k := first; k < last; k++ {
				counts[k] += len(it.ranges)
			}
		}
		total := 0
		for k := range counts {
			total, counts[k] = total+counts[k], total
		}
		backing := make([]cidr.Range, total)
		segs := make([][]cidr.Range, len(bounds)-1)
		for k := range segs {
			segs[k] = backing[counts[k]:counts[k]:counts[k+1]]
		}
		for i, it := range its {
			for k := spans[i][0]; k < spans[i][1]; k++ {
				segs[k] = append(segs[k], it.ranges...)
			}
		}
		for k := range segs {
			if len(segs[k]) > 1 {
				segs[k] = cidr.MergeRanges(segs[k])
			}
		}
		for k := 0; k < len(segs); {
			ranges := segs[k]
			end := k + 1
			for end < len(segs) && slices.Equal(segs[end], ranges) {
				end++
			}
			for _, r := range ranges {
				out = append(out, Element{Addr: r, Proto: proto, PortFrom: uint16(bounds[k]), PortTo: uint16(bounds[end] - 1)})
			}
			k = end
		}
	}
	return out
}
