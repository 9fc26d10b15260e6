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
func distances(set *firewallv1alpha1.FirewallSet, active []*firewallv1alpha1.Firewall) map[string]int32 {
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
	out := make(map[string]int32, len(ranked))
	for i, fw := range ranked {
		out[fw.Name] = rankDistance(set.Spec.Distance, i)
	}
	return out
}

// rankDistance is the distance of the set's Firewall of the given rank (from 0).
func rankDistance(base int32, rank int) int32 {
	return min(base+int32(min(rank, 2)), firewallv1alpha1.LongestDistance)
}
