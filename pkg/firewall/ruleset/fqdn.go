package ruleset

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
)

// FQDNChain is the chain of the rules that allow the addresses of the FQDN
// selectors, one chain per family.
func FQDNChain(v6 bool) string { return SetName("fqdn", v6) }

// FQDNSetName is the name of a selector's set of the given family.
func FQDNSetName(sel fqdn.Selector, v6 bool) string { return SetName(sel.SetBase(), v6) }

// fqdnPortsPrefix starts the names of the port sets of FQDN rules.
const fqdnPortsPrefix = "fqdnports_"

// fqdnParts returns what enforces the policies' toFQDNs: per selector a set
// of each family, which the DNS proxy fills; per distinct port list of the
// rules a port set; per family a chain with one rule per selector and port
// list; and the forward rules that jump to those chains from the internal
// prefixes. Nothing when no policy has toFQDNs, so that rulesets without
// them stay as they were. The forward chain grows by two rules, not by one
// per selector: a new connection to an address that no selector allowed
// costs one set lookup per selector rule, and only if it came this far.
func fqdnParts(policies []*fwv1alpha1.PolicySpec) (sets []*Set, chains []*Chain, jumps []*Rule, err error) {
	type pair struct {
		sel   fqdn.Selector
		ports string // a port set's name; "" for every port
	}
	pairs := map[pair]bool{}
	portSets := map[string]*Set{}
	for _, spec := range policies {
		if spec == nil {
			continue
		}
		for _, rule := range spec.Egress {
			if len(rule.ToFQDNs) == 0 {
				continue
			}
			ports, err := protoPortSet(rule.Ports)
			if err != nil {
				return nil, nil, nil, err
			}
			name := ""
			if ports != nil {
				name = ports.Name
				portSets[name] = ports
			}
			for _, sel := range rule.ToFQDNs {
				pairs[pair{fqdn.FromAPI(sel), name}] = true
			}
		}
	}
	if len(pairs) == 0 {
		return nil, nil, nil, nil
	}
	sorted := make([]pair, 0, len(pairs))
	for p := range pairs {
		sorted = append(sorted, p)
	}
	slices.SortFunc(sorted, func(a, b pair) int {
		return cmp.Or(strings.Compare(a.sel.SetBase(), b.sel.SetBase()), strings.Compare(a.ports, b.ports))
	})
	for _, v6 := range []bool{false, true} {
		chain := &Chain{Name: FQDNChain(v6)}
		for i, p := range sorted {
			if i == 0 || p.sel != sorted[i-1].sel {
				sets = append(sets, &Set{Name: FQDNSetName(p.sel, v6), V6: v6, Kind: FQDNSet, Comment: p.sel.Key()})
			}
			chain.Rules = append(chain.Rules, &Rule{ID: "fqdn" + suffix(v6), Family: family(v6),
				DaddrSet: FQDNSetName(p.sel, v6), PortSet: p.ports, Counter: true, Verdict: Accept})
		}
		chains = append(chains, chain)
		jumps = append(jumps, &Rule{ID: "fqdn-jump" + suffix(v6), Family: family(v6),
			SaddrSet: SetName(SetInternal, v6), Verdict: Jump, JumpTo: chain.Name})
	}
	names := make([]string, 0, len(portSets))
	for name := range portSets {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sets = append(sets, portSets[name])
	}
	return sets, chains, jumps, nil
}

// protoPortSet returns the port set of a rule's ports, named after its
// elements so that rules with the same ports share it; nil for no ports
// (every protocol and port). Overlapping ports are merged: the kernel
// refuses overlapping elements.
func protoPortSet(ports []fwv1alpha1.PolicyPort) (*Set, error) {
	if len(ports) == 0 {
		return nil, nil
	}
	var elems []Element
	for _, p := range ports {
		proto, ok := protocolNumbers[strings.ToUpper(p.Protocol)]
		if p.Protocol == "" {
			proto, ok = protocolNumbers["TCP"]
		}
		if !ok {
			return nil, fmt.Errorf("unknown protocol %q", p.Protocol)
		}
		e := Element{Proto: proto, PortFrom: 0, PortTo: 65535}
		if p.Port != nil {
			e.PortFrom, e.PortTo = uint16(*p.Port), uint16(*p.Port)
			if p.EndPort != nil {
				e.PortTo = uint16(*p.EndPort)
			}
		}
		elems = append(elems, e)
	}
	slices.SortFunc(elems, CompareElements)
	merged := elems[:1]
	for _, e := range elems[1:] {
		last := &merged[len(merged)-1]
		if e.Proto == last.Proto && uint32(e.PortFrom) <= uint32(last.PortTo)+1 {
			last.PortTo = max(last.PortTo, e.PortTo)
			continue
		}
		merged = append(merged, e)
	}
	var text strings.Builder
	for _, e := range merged {
		text.WriteString(ElementText(ProtoPortSet, e) + ",")
	}
	sum := sha256.Sum256([]byte(text.String()))
	return &Set{Name: fqdnPortsPrefix + hex.EncodeToString(sum[:6]), Kind: ProtoPortSet, Elements: merged}, nil
}

// withFQDN adds the FQDN parts to a ruleset's sets and chains: the jumps go
// into the forward chain before its logged drop.
func withFQDN(rs *Ruleset, sets []*Set, chains []*Chain, jumps []*Rule) {
	if len(jumps) == 0 {
		return
	}
	for _, c := range rs.Chains {
		if c.Name != "forward" {
			continue
		}
		at := len(c.Rules)
		for i, r := range c.Rules {
			if r.ID == "log-drop" {
				at = i
			}
		}
		c.Rules = slices.Insert(c.Rules, at, jumps...)
	}
	rs.Sets = append(rs.Sets, sets...)
	rs.Chains = append(rs.Chains, chains...)
}

// FQDNSelectors returns the selectors whose sets the ruleset has, in the
// order of their sets.
func (rs *Ruleset) FQDNSelectors() []fqdn.Selector {
	var out []fqdn.Selector
	for _, s := range rs.Sets {
		if s.Kind != FQDNSet || s.V6 {
			continue
		}
		if sel, ok := fqdn.ParseKey(s.Comment); ok {
			out = append(out, sel)
		}
	}
	return out
}
