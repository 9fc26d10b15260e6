package ruleset

import (
	"fmt"
	"net/netip"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// firewallParts are what Build and Builder.Build take from the firewall
// spec (none: an empty one): its internal prefixes and its fixed chains.
func firewallParts(fw *fwv1alpha1.FirewallTrafficSpec) ([]cidr.Range, []*Chain, error) {
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

// internalRanges returns the internal prefixes, merged.
func internalRanges(fw *fwv1alpha1.FirewallTrafficSpec) ([]cidr.Range, error) {
	var internal []cidr.Range
	for _, p := range fw.InternalPrefixes {
		prefix, err := cidr.Parse(p)
		if err != nil {
			return nil, fmt.Errorf("internal prefix %q: %w", p, err)
		}
		internal = append(internal, cidr.RangeOf(prefix))
	}
	return cidr.MergeRanges(internal), nil
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

	// Before the firewall image's own masquerade (os-installer's table inet
	// nat, priority 0): the first NAT chain that translates a connection
	// decides its address. firewall-controller uses -1 for the same reason.
	postrouting := &Chain{Name: "postrouting", Type: "nat", Hook: "postrouting", Priority: -1}
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
