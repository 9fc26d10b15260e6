package ruleset

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
)

// Protocol numbers of the protocols a PolicyPort may name.
var protocolNumbers = map[string]uint8{"TCP": 6, "UDP": 17, "SCTP": 132}

// Set names. Every set exists in every ruleset, empty or not, so that a policy
// change only ever changes set elements, never the table's structure.
const (
	SetInternal   = "internal"    // the internal prefixes
	SetEgress     = "egress"      // destination . proto . port allowed from inside
	SetEgressAny  = "egress_any"  // destinations allowed from inside on every port
	SetIngress    = "ingress"     // source . proto . port allowed to the inside
	SetIngressAny = "ingress_any" // sources allowed to the inside on every port
)

// ShardName is the name of one shard of a concatenated set, and of the chain
// that matches it.
func ShardName(base string, v6 bool, shard int) string {
	return fmt.Sprintf("%s_%d", SetName(base, v6), shard)
}

// SpanName is the name of the set of the range elements of a concatenated set
// that cross the bounds of its shards.
func SpanName(base string, v6 bool) string {
	return SetName(base, v6) + "_span"
}

// DispatchName is the name of the verdict map that jumps to the shards of a
// concatenated set.
func DispatchName(base string, v6 bool) string {
	return SetName(base, v6) + "_shards"
}

// rangesRuleID is the ID of the rules that accept the range elements of a
// concatenated set: its span rule and its shards' rules, counted as one.
func rangesRuleID(base string, v6 bool) string {
	return base + suffix(v6)
}

// SetName is the name of the set of the given base name and family.
func SetName(base string, v6 bool) string {
	if v6 {
		return base + "_v6"
	}
	return base + "_v4"
}

// Build turns the firewall's traffic spec and the network policies into the
// desired ruleset. It expects validated input and fails on what it cannot
// parse.
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
		rs.Sets = append(rs.Sets, addrSet(SetName(SetEgressAny, v6), v6, Merge(egress.any)))
		rs.Sets = append(rs.Sets, ingressSets...)
		rs.Sets = append(rs.Sets, addrSet(SetName(SetIngressAny, v6), v6, Merge(ingress.any)))
		rs.Sets = append(rs.Sets, serviceSet(v6, services))
	}
	rs.Chains = append(rs.Chains, layoutChains(used)...)
	return rs, nil
}

// internalRanges returns the internal prefixes, merged.
func internalRanges(fw *fwv1alpha1.FirewallTrafficSpec) ([]Range, error) {
	var internal []Range
	for _, p := range fw.InternalPrefixes {
		prefix, err := validation.ParseCIDR(p)
		if err != nil {
			return nil, fmt.Errorf("internal prefix %q: %w", p, err)
		}
		internal = append(internal, PrefixRange(prefix))
	}
	return Merge(internal), nil
}

// buildChains returns the table's chains: a fixed number of rules whatever
// the policies, plus one per rate limit and SNAT rule.
func buildChains(fw *fwv1alpha1.FirewallTrafficSpec) ([]*Chain, error) {
	var chains []*Chain
	forward := &Chain{Name: "forward", Type: "filter", Hook: "forward", Priority: 0, PolicyDrop: true}
	for _, limit := range fw.RateLimits {
		forward.Rules = append(forward.Rules, &Rule{
			ID: "ratelimit:" + limit.Interface, IIfName: limit.Interface, LimitOverMiBps: limit.Rate, Counter: true, Verdict: Drop,
		})
	}
	forward.Rules = append(forward.Rules, &Rule{ID: "established", CtEstablishedRelated: true, Counter: true, Verdict: Accept})
	for _, v6 := range []bool{false, true} {
		fam := family(v6)
		forward.Rules = append(forward.Rules,
			&Rule{ID: "egress-exact" + suffix(v6), Family: fam,
				SaddrSet: SetName(SetInternal, v6), ConcatSet: ExactName(SetEgress, v6), Counter: true, Verdict: Accept},
			&Rule{ID: "egress-dispatch" + suffix(v6), Family: fam,
				SaddrSet: SetName(SetInternal, v6), DispatchMap: DispatchName(SetEgress, v6)},
			&Rule{ID: rangesRuleID(SetEgress, v6), Family: fam,
				SaddrSet: SetName(SetInternal, v6), ConcatSet: SpanName(SetEgress, v6), Counter: true, Verdict: Accept},
			&Rule{ID: "egress-any" + suffix(v6), Family: fam,
				SaddrSet: SetName(SetInternal, v6), DaddrSet: SetName(SetEgressAny, v6), Counter: true, Verdict: Accept},
			&Rule{ID: "ingress-exact" + suffix(v6), Family: fam,
				DaddrSet: SetName(SetInternal, v6), ConcatSet: ExactName(SetIngress, v6), ConcatSaddr: true, Counter: true, Verdict: Accept},
			&Rule{ID: "ingress-dispatch" + suffix(v6), Family: fam,
				DaddrSet: SetName(SetInternal, v6), DispatchMap: DispatchName(SetIngress, v6), DispatchSaddr: true},
			&Rule{ID: rangesRuleID(SetIngress, v6), Family: fam,
				DaddrSet: SetName(SetInternal, v6), ConcatSet: SpanName(SetIngress, v6), ConcatSaddr: true, Counter: true, Verdict: Accept},
			&Rule{ID: "ingress-any" + suffix(v6), Family: fam,
				SaddrSet: SetName(SetIngressAny, v6), DaddrSet: SetName(SetInternal, v6), Counter: true, Verdict: Accept},
		)
		forward.Rules = append(forward.Rules, &Rule{ID: "service" + suffix(v6), Family: fam,
			ServiceSet: SetName(SetServices, v6), Counter: true, Verdict: Accept})
	}
	forward.Rules = append(forward.Rules,
		&Rule{ID: "log-drop", LogLimitPerSecond: 10, LogPrefix: DropLogPrefix},
		&Rule{ID: "drop", Counter: true, Verdict: Drop},
	)
	chains = append(chains, forward)

	postrouting := &Chain{Name: "postrouting", Type: "nat", Hook: "postrouting", Priority: 100}
	for _, snat := range fw.EgressRules {
		ips := map[bool]string{}
		for _, ip := range snat.IPs {
			addr, err := netip.ParseAddr(ip)
			if err != nil {
				return nil, fmt.Errorf("SNAT address %q: %w", ip, err)
			}
			ips[addr.Is6()] = addr.String()
		}
		for _, v6 := range []bool{false, true} {
			r := &Rule{Family: family(v6), OIfName: snat.Interface, SaddrSet: SetName(SetInternal, v6), Counter: true}
			switch ip, ok := ips[v6]; {
			case ok:
				r.ID, r.Verdict, r.SNATTo = "snat:"+snat.Interface+suffix(v6), SNAT, ip
			case len(snat.IPs) == 0:
				r.ID, r.Verdict = "masquerade:"+snat.Interface+suffix(v6), Masquerade
			default:
				continue // only the other family is translated
			}
			postrouting.Rules = append(postrouting.Rules, r)
		}
	}
	chains = append(chains, postrouting)
	return chains, nil
}

func family(v6 bool) int {
	if v6 {
		return 6
	}
	return 4
}

func suffix(v6 bool) string {
	if v6 {
		return "-v6"
	}
	return "-v4"
}

// ExactName is the name of the hash set of single address . proto . port
// elements.
func ExactName(base string, v6 bool) string {
	return SetName(base, v6) + "_exact"
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
		var ranges []Range
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

// Elements returns the elements of the set base of the given family, collected
// from its shards, sorted.
func (rs *Ruleset) Elements(base string, v6 bool) []Element {
	var out []Element
	for _, s := range rs.Sets {
		if s.V6 == v6 && (s.Name == SetName(base, v6) || strings.HasPrefix(s.Name, SetName(base, v6)+"_") && s.Kind.Concat()) {
			out = append(out, s.Elements...)
		}
	}
	slices.SortFunc(out, CompareElements)
	return out
}

func addrSet(name string, v6 bool, ranges []Range) *Set {
	s := &Set{Name: name, V6: v6, Kind: AddrSet}
	for _, r := range ranges {
		if r.From.Is6() == v6 {
			s.Elements = append(s.Elements, Element{Addr: r})
		}
	}
	return s
}

// direction collects the allowed peers of egress or ingress.
type direction struct {
	any   []Range
	ports []portItem
}

// portItem allows the peers in ranges on one protocol and port range.
type portItem struct {
	ranges   []Range
	proto    uint8
	from, to uint16
}

func (d *direction) add(blocks []fwv1alpha1.IPBlock, ports []fwv1alpha1.PolicyPort) error {
	ranges, err := blockRanges(blocks)
	if err != nil {
		return err
	}
	if len(ports) == 0 {
		d.any = append(d.any, ranges...)
		return nil
	}
	for _, p := range ports {
		proto, ok := protocolNumbers[strings.ToUpper(p.Protocol)]
		if p.Protocol == "" {
			proto, ok = protocolNumbers["TCP"]
		}
		if !ok {
			return fmt.Errorf("unknown protocol %q", p.Protocol)
		}
		item := portItem{ranges: ranges, proto: proto, from: 0, to: 65535}
		if p.Port != nil {
			item.from, item.to = uint16(*p.Port), uint16(*p.Port)
			if p.EndPort != nil {
				item.to = uint16(*p.EndPort)
			}
		}
		d.ports = append(d.ports, item)
	}
	return nil
}

// blockRanges returns the addresses of the blocks, each CIDR minus its
// excepts, merged.
func blockRanges(blocks []fwv1alpha1.IPBlock) ([]Range, error) {
	if len(blocks) == 1 && len(blocks[0].Except) == 0 {
		prefix, err := validation.ParseCIDR(blocks[0].CIDR)
		if err != nil {
			return nil, fmt.Errorf("cidr %q: %w", blocks[0].CIDR, err)
		}
		return []Range{PrefixRange(prefix)}, nil
	}
	var out []Range
	for _, b := range blocks {
		prefix, err := validation.ParseCIDR(b.CIDR)
		if err != nil {
			return nil, fmt.Errorf("cidr %q: %w", b.CIDR, err)
		}
		var except []Range
		for _, e := range b.Except {
			ep, err := validation.ParseCIDR(e)
			if err != nil {
				return nil, fmt.Errorf("except %q: %w", e, err)
			}
			except = append(except, PrefixRange(ep))
		}
		out = append(out, Subtract([]Range{PrefixRange(prefix)}, Merge(except))...)
	}
	return Merge(out), nil
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
		var ranges []Range
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
		backing := make([]Range, total)
		segs := make([][]Range, len(bounds)-1)
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
				segs[k] = Merge(segs[k])
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

// firewallParts are what Build and Builder.Build take from the firewall
// spec (none: an empty one): its internal prefixes and its fixed chains.
func firewallParts(fw *fwv1alpha1.FirewallTrafficSpec) ([]Range, []*Chain, error) {
	if fw == nil {
		fw = &fwv1alpha1.FirewallTrafficSpec{}
	}
	internal, err := internalRanges(fw)
	if err != nil {
		return nil, nil, err
	}
	chains, err := buildChains(fw)
	if err != nil {
		return nil, nil, err
	}
	return internal, chains, nil
}
