package firewallset

import (
	"sort"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// distances ranks a set's active Firewalls and gives each its distance: the
// first the set's own, the second one more, the others two more, at most
// LongestDistance. One firewall attracts the traffic, the next is the first
// to take over. The ranking prefers Ready ones, then the one already
// shortest (traffic does not move between two healthy firewalls on every
// reconcile), then the oldest, then the name.
//
// A firewall's agent announces a new distance by resetting its BGP sessions
// (bgpdistance): the fabric withdraws its routes until they come back. So a
// Ready firewall takes a shorter distance only while another Ready firewall
// of the namespace (others: those of other sets) announces the distance it
// was given and does not change in the same pass: that one carries the
// traffic meanwhile. Until then it keeps its distance: two firewalls never
// reset at once, and the survivor of a deleted firewall waits for its
// replacement to be Ready. Two exceptions: the first-ranked one moves at once
// when another firewall may announce its distance or a shorter one (a failed
// firewall may still attract the traffic), and so does one at
// RollingUpdateDistance or beyond, where a rolling set would tie with it.
// Every firewall ranked after one that keeps its distance gets more than the
// one before it. A longer distance is taken at once: during a roll the new
// set carries.
func distances(set *firewallv1alpha1.FirewallSet, active, others []*firewallv1alpha1.Firewall) map[string]int32 {
	ranked := append([]*firewallv1alpha1.Firewall(nil), active...)
	sort.SliceStable(ranked, func(i, j int) bool {
		a, b := ranked[i], ranked[j]
		if ra, rb := isReady(a), isReady(b); ra != rb {
			return ra
		}
		if a.Spec.Distance != b.Spec.Distance {
			return a.Spec.Distance < b.Spec.Distance
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	changing := map[string]bool{}
	carries := func(fw *firewallv1alpha1.Firewall) bool {
		for _, g := range others {
			if isReady(g) && firewallv1alpha1.DistanceInForce(g) {
				return true
			}
		}
		for _, g := range ranked {
			if g != fw && isReady(g) && firewallv1alpha1.DistanceInForce(g) && !changing[g.Name] {
				return true
			}
		}
		return false
	}
	// shortest tells whether no other firewall may announce fw's distance or
	// less: fw has all the traffic already. One that failed at a shorter
	// distance may still attract it, so fw must not wait then.
	shortest := func(fw *firewallv1alpha1.Firewall) bool {
		for _, g := range append(append([]*firewallv1alpha1.Firewall(nil), ranked...), others...) {
			if g == fw {
				continue
			}
			if g.Spec.Distance <= fw.Spec.Distance {
				return false
			}
			if a := g.Status.AgentStatus; a != nil && a.Distance != nil && *a.Distance <= fw.Spec.Distance {
				return false
			}
		}
		return true
	}
	out := make(map[string]int32, len(ranked))
	floor, kept := int32(0), false
	for i, fw := range ranked {
		want := min(max(rankDistance(set.Spec.Distance, i), floor), firewallv1alpha1.LongestDistance)
		got := want
		waits := isReady(fw) && want < fw.Spec.Distance && fw.Spec.Distance < firewallv1alpha1.RollingUpdateDistance &&
			!carries(fw) && (i > 0 || shortest(fw))
		if waits {
			got, kept = fw.Spec.Distance, true
		}
		if got != fw.Spec.Distance {
			changing[fw.Name] = true
		}
		if kept {
			floor = got + 1
		}
		out[fw.Name] = got
	}
	return out
}

// rankDistance is the distance of the set's Firewall of the given rank (from 0).
func rankDistance(base int32, rank int) int32 {
	return min(base+int32(min(rank, 2)), firewallv1alpha1.LongestDistance)
}
