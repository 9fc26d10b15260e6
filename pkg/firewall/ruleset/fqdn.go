package ruleset

import (
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

// FQDNSetName is the name of an FQDN set of the given family from its base.
func FQDNSetName(base string, v6 bool) string { return SetName(base, v6) }

// FQDNSetBase returns the base name of the FQDN set and whether name is one:
// fqdn_<port signature>_v4 or _v6.
func FQDNSetBase(name string) (base string, v6, ok bool) {
	switch {
	case !strings.HasPrefix(name, fqdnSetPrefix):
		return "", false, false
	case strings.HasSuffix(name, "_v4"):
		return strings.TrimSuffix(name, "_v4"), false, true
	case strings.HasSuffix(name, "_v6"):
		return strings.TrimSuffix(name, "_v6"), true, true
	}
	return "", false, false
}

// fqdnPortsPrefix starts the names of the port sets of FQDN rules.
const fqdnPortsPrefix = "fqdnports_"

// fqdnSetPrefix starts the base names of the FQDN sets. The set of the
// selectors of every port is fqdn_any; that of a port list carries the hash
// of its port set's name.
const fqdnSetPrefix = "fqdn_"

// FQDNBinding is a selector and the base names of the FQDN sets that take
// its addresses, one per distinct port list of the rules it is in.
type FQDNBinding struct {
	Selector fqdn.Selector
	Sets     []string
}

// fqdnParts returns what enforces the policies' toFQDNs: per distinct port
// list of the rules (its "port signature") an FQDN set of each family,
// which the DNS proxy fills for every selector with that port list, and a
// port set; per family a chain with one rule per port list; the forward
// rules that jump to those chains from the internal prefixes; and which
// selector fills which sets. Sets and rules are few and do not depend on the
// selectors: a selector added or removed changes what the proxy writes,
// not the table. Nothing when no policy has toFQDNs, so that rulesets
// without them stay as they were. A new connection to an address that no
// selector allowed costs one set lookup per port list.
func fqdnParts(policies []*fwv1alpha1.PolicySpec) (sets []*Set, chains []*Chain, jumps []*Rule, bindings []FQDNBinding, err error) {
	bySel := map[fqdn.Selector]map[string]bool{}
	portSets := map[string]*Set{} // by FQDN set base; nil for every port
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
				return nil, nil, nil, nil, err
			}
			base := fqdnSetPrefix + "any"
			if ports != nil {
				base = fqdnSetPrefix + strings.TrimPrefix(ports.Name, fqdnPortsPrefix)
			}
			portSets[base] = ports
			for _, api := range rule.ToFQDNs {
				sel := fqdn.FromAPI(api)
				if bySel[sel] == nil {
					bySel[sel] = map[string]bool{}
				}
				bySel[sel][base] = true
			}
		}
	}
	if len(bySel) == 0 {
		return nil, nil, nil, nil, nil
	}
	bases := make([]string, 0, len(portSets))
	for base := range portSets {
		bases = append(bases, base)
	}
	slices.Sort(bases)
	for _, v6 := range []bool{false, true} {
		chain := &Chain{Name: FQDNChain(v6)}
		for _, base := range bases {
			comment, portSet := "every port", ""
			if ps := portSets[base]; ps != nil {
				comment, portSet = portsComment(ps), ps.Name
			}
			sets = append(sets, &Set{Name: FQDNSetName(base, v6), V6: v6, Kind: FQDNSet, Comment: comment})
			chain.Rules = append(chain.Rules, &Rule{ID: "fqdn" + suffix(v6), Family: family(v6),
				DaddrSet: FQDNSetName(base, v6), PortSet: portSet, Counter: true, Verdict: Accept})
		}
		chains = append(chains, chain)
		jumps = append(jumps, &Rule{ID: "fqdn-jump" + suffix(v6), Family: family(v6),
			SaddrSet: SetName(SetInternal, v6), Verdict: Jump, JumpTo: chain.Name})
	}
	for _, base := range bases {
		if ps := portSets[base]; ps != nil {
			sets = append(sets, ps)
		}
	}
	bindings = make([]FQDNBinding, 0, len(bySel))
	for sel, in := range bySel {
		b := FQDNBinding{Selector: sel}
		for base := range in {
			b.Sets = append(b.Sets, base)
		}
		slices.Sort(b.Sets)
		bindings = append(bindings, b)
	}
	slices.SortFunc(bindings, func(a, b FQDNBinding) int { return strings.Compare(a.Selector.Key(), b.Selector.Key()) })
	return sets, chains, jumps, bindings, nil
}

// portsComment is an FQDN set's comment: its port list as nft prints it,
// cut to fit a comment in the kernel.
func portsComment(ps *Set) string {
	var parts []string
	for _, e := range ps.Elements {
		parts = append(parts, ElementText(ProtoPortSet, e))
	}
	text := "ports " + strings.Join(parts, ", ")
	if len(text) > maxSetComment {
		text = text[:maxSetComment-3] + "..."
	}
	return text
}

// maxSetComment is the longest set comment the kernel keeps (its user data
// holds 256 bytes, with a type and a length byte).
const maxSetComment = 250

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
func withFQDN(rs *Ruleset, sets []*Set, chains []*Chain, jumps []*Rule, bindings []FQDNBinding) {
	if len(jumps) == 0 {
		return
	}
	rs.FQDN = bindings
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

// FQDNSelectors returns the selectors the ruleset enforces, sorted by key.
func (rs *Ruleset) FQDNSelectors() []fqdn.Selector {
	out := make([]fqdn.Selector, 0, len(rs.FQDN))
	for _, b := range rs.FQDN {
		out = append(out, b.Selector)
	}
	return out
}
