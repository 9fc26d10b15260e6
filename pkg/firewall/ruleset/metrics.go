package ruleset

import "slices"

// MetricsGuard says where the agent serves its metrics to the shoot: TCP
// Port on the address of Interface, the interface into the internal network.
type MetricsGuard struct {
	Interface string
	Port      uint16
}

// WithMetricsGuard returns rs with input rules for the metrics port alone:
// accepted from the loopback, accepted from the internal prefixes arriving
// on the internal interface, dropped otherwise; whatever else reaches the
// firewall itself is not the agent's business. The rules go into the input
// chain of the DNS redirect when there is one. rs is not modified.
func WithMetricsGuard(rs *Ruleset, g MetricsGuard) *Ruleset {
	out := *rs
	out.Chains = slices.Clone(rs.Chains)
	input := &Chain{Name: "input", Type: "filter", Hook: "input", Priority: 0}
	i := slices.IndexFunc(out.Chains, func(c *Chain) bool { return c.Name == input.Name })
	if i >= 0 {
		c := *out.Chains[i]
		c.Rules = slices.Clone(c.Rules)
		input = &c
		out.Chains[i] = input
	} else {
		out.Chains = append(out.Chains, input)
	}
	input.Rules = append(input.Rules, &Rule{ID: "metrics-loopback", IIfName: "lo", L4Proto: protoTCP, DPort: g.Port, Verdict: Accept})
	for _, v6 := range []bool{false, true} {
		input.Rules = append(input.Rules, &Rule{ID: "metrics-internal" + suffix(v6), Family: family(v6), IIfName: g.Interface,
			L4Proto: protoTCP, DPort: g.Port, SaddrSet: SetName(SetInternal, v6), Counter: true, Verdict: Accept})
	}
	input.Rules = append(input.Rules, &Rule{ID: "metrics-drop", L4Proto: protoTCP, DPort: g.Port, Counter: true, Verdict: Drop})
	out.Openings = append(slices.Clone(rs.Openings),
		&Rule{ID: "metrics", IIfName: g.Interface, L4Proto: protoTCP, DPort: g.Port, Counter: true, Verdict: Accept})
	return &out
}
