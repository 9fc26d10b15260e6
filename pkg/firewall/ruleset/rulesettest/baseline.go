package rulesettest

import (
	"fmt"
	"strings"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Baseline renders the policies as metal-stack's firewall-controller does:
// one rule per policy item, each with anonymous sets, in a table "inet
// baseline" whose internal prefixes are 10.0.1.0/24 and fd00:1::/64. It is
// what the benchmarks compare the agent with.
func Baseline(spec *fwv1alpha1.PolicySpec) string {
	var b strings.Builder
	b.WriteString("table inet baseline {\n\tchain forward {\n\t\ttype filter hook forward priority 0; policy drop;\n\t\tct state established,related counter accept\n")
	for i, e := range spec.Egress {
		ip, internal := "ip", "10.0.1.0/24"
		if strings.Contains(e.To[0].CIDR, ":") {
			ip, internal = "ip6", "fd00:1::/64"
		}
		var cidrs, ports []string
		for _, t := range e.To {
			cidrs = append(cidrs, t.CIDR)
		}
		for _, p := range e.Ports {
			ports = append(ports, fmt.Sprint(*p.Port))
		}
		fmt.Fprintf(&b, "\t\t%s saddr %s %s daddr { %s } tcp dport { %s } counter accept comment \"policy %d\"\n",
			ip, internal, ip, strings.Join(cidrs, ", "), strings.Join(ports, ", "), i)
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}
