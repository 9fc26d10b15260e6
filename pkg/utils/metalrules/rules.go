// Package metalrules converts between the metal-api's firewall rules (the
// allocation's firewall_rules, metal-stack MEP-16) and the
// ClusterwideNetworkPolicy schema the agent enforces.
package metalrules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/metal-stack/metal-go/api/models"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// Protocols the metal-api's rules know; an empty protocol is TCP there.
const (
	protocolTCP = "tcp"
	protocolUDP = "udp"
)

// FromPolicy converts a policy into the metal-api's rules: one rule per
// protocol and address family of each policy rule, as the metal-api holds
// one protocol and one family per rule. Only what validation accepts for
// initialRules (TCP or UDP, single ports, no exceptions) converts.
func FromPolicy(spec *fwv1alpha1.PolicySpec) (*models.V1FirewallRules, error) {
	out := &models.V1FirewallRules{Egress: []*models.V1FirewallEgressRule{}, Ingress: []*models.V1FirewallIngressRule{}}
	for i, r := range spec.Egress {
		groups, err := group(r.To, r.Ports)
		if err != nil {
			return nil, fmt.Errorf("egress[%d]: %w", i, err)
		}
		for _, g := range groups {
			out.Egress = append(out.Egress, &models.V1FirewallEgressRule{Protocol: g.protocol, Ports: g.ports, To: g.cidrs})
		}
	}
	for i, r := range spec.Ingress {
		groups, err := group(r.From, r.Ports)
		if err != nil {
			return nil, fmt.Errorf("ingress[%d]: %w", i, err)
		}
		for _, g := range groups {
			out.Ingress = append(out.Ingress, &models.V1FirewallIngressRule{Protocol: g.protocol, Ports: g.ports, From: g.cidrs, To: []string{}})
		}
	}
	return out, nil
}

type ruleGroup struct {
	protocol string
	ports    []int32
	cidrs    []string
}

// group splits peers and ports into (protocol, family) groups.
func group(blocks []fwv1alpha1.IPBlock, ports []fwv1alpha1.PolicyPort) ([]ruleGroup, error) {
	byProto := map[string][]int32{}
	for _, p := range ports {
		proto := strings.ToLower(p.Protocol)
		if proto == "" {
			proto = protocolTCP
		}
		if proto != protocolTCP && proto != protocolUDP {
			return nil, fmt.Errorf("protocol %q: the metal-api's rules hold TCP and UDP only", p.Protocol)
		}
		if p.Port == nil || (p.EndPort != nil && *p.EndPort != *p.Port) {
			return nil, fmt.Errorf("the metal-api's rules hold single ports only")
		}
		byProto[proto] = append(byProto[proto], *p.Port)
	}
	if len(byProto) == 0 {
		return nil, fmt.Errorf("the metal-api's rules need ports")
	}
	var v4, v6 []string
	for _, b := range blocks {
		if len(b.Except) > 0 {
			return nil, fmt.Errorf("cidr %s: the metal-api's rules hold no exceptions", b.CIDR)
		}
		p, err := cidr.Parse(b.CIDR)
		if err != nil {
			return nil, fmt.Errorf("cidr %q: %w", b.CIDR, err)
		}
		if p.Addr().Is4() {
			v4 = append(v4, p.String())
		} else {
			v6 = append(v6, p.String())
		}
	}
	var out []ruleGroup
	for _, proto := range []string{protocolTCP, protocolUDP} {
		ports := byProto[proto]
		if len(ports) == 0 {
			continue
		}
		slices.Sort(ports)
		ports = slices.Compact(ports)
		for _, cidrs := range [][]string{v4, v6} {
			if len(cidrs) > 0 {
				out = append(out, ruleGroup{protocol: proto, ports: ports, cidrs: cidrs})
			}
		}
	}
	return out, nil
}

// Skipped is a metal-api rule the agent cannot enforce as written.
type Skipped struct {
	Rule   string
	Reason string
}

// ToPolicies converts the metal-api's rules into one policy per rule, so
// that one bad rule never takes the others with it. A rule that cannot be
// enforced as written (an unknown protocol, an ingress rule with
// destinations) is skipped and said why: enforcing less than it asks would
// open more than its owner meant, or less than it says.
func ToPolicies(rules *models.V1FirewallRules) ([]*fwv1alpha1.PolicySpec, []Skipped) {
	if rules == nil {
		return nil, nil
	}
	var (
		out     []*fwv1alpha1.PolicySpec
		skipped []Skipped
	)
	for i, r := range rules.Egress {
		name := fmt.Sprintf("egress[%d]", i)
		if r == nil {
			continue
		}
		ports, err := policyPorts(r.Protocol, r.Ports)
		if err != nil {
			skipped = append(skipped, Skipped{Rule: name, Reason: err.Error()})
			continue
		}
		out = append(out, &fwv1alpha1.PolicySpec{Description: "metal-api " + name + comment(r.Comment),
			Egress: []fwv1alpha1.EgressRule{{To: blocks(r.To), Ports: ports}}})
	}
	for i, r := range rules.Ingress {
		name := fmt.Sprintf("ingress[%d]", i)
		if r == nil {
			continue
		}
		if len(r.To) > 0 {
			skipped = append(skipped, Skipped{Rule: name, Reason: "ingress rules with destinations (to) are not enforced: the agent allows ingress to the internal prefixes only"})
			continue
		}
		ports, err := policyPorts(r.Protocol, r.Ports)
		if err != nil {
			skipped = append(skipped, Skipped{Rule: name, Reason: err.Error()})
			continue
		}
		out = append(out, &fwv1alpha1.PolicySpec{Description: "metal-api " + name + comment(r.Comment),
			Ingress: []fwv1alpha1.IngressRule{{From: blocks(r.From), Ports: ports}}})
	}
	return out, skipped
}

func comment(c string) string {
	if c == "" {
		return ""
	}
	return ": " + c
}

// policyPorts converts a metal-api rule's protocol and ports; no ports is
// every port of the protocol.
func policyPorts(protocol string, ports []int32) ([]fwv1alpha1.PolicyPort, error) {
	proto := strings.ToLower(protocol)
	if proto == "" {
		proto = protocolTCP
	}
	if proto != protocolTCP && proto != protocolUDP {
		return nil, fmt.Errorf("protocol %q is neither tcp nor udp", protocol)
	}
	upper := strings.ToUpper(proto)
	if len(ports) == 0 {
		return []fwv1alpha1.PolicyPort{{Protocol: upper}}, nil
	}
	out := make([]fwv1alpha1.PolicyPort, 0, len(ports))
	for _, p := range ports {
		out = append(out, fwv1alpha1.PolicyPort{Protocol: upper, Port: &p})
	}
	return out, nil
}

func blocks(cidrs []string) []fwv1alpha1.IPBlock {
	out := make([]fwv1alpha1.IPBlock, 0, len(cidrs))
	for _, c := range cidrs {
		out = append(out, fwv1alpha1.IPBlock{CIDR: c})
	}
	return out
}
