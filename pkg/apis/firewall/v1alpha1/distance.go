package v1alpha1

// Distances of Firewalls and FirewallSets: the number of times a firewall
// prepends its AS to the routes it announces, so that the router prefers
// the firewall with the shortest AS path.
const (
	// ShortestDistance is that of a deployment's settled set.
	ShortestDistance int32 = 0
	// RollingUpdateDistance is that of a set rolling in next to an old one:
	// its firewalls attract no traffic while the old ones forward.
	RollingUpdateDistance int32 = 3
	// LongestDistance bounds every distance.
	LongestDistance int32 = 8
	// MaxReplicas bounds a shoot's firewalls: each is a machine.
	MaxReplicas int32 = 4
)

// DistanceInForce tells whether fw's agent announces the distance fw was
// given, or reports that it announces none (no routing, or an agent without
// it): such a firewall holds no route a distance could move.
func DistanceInForce(fw *Firewall) bool {
	a := fw.Status.AgentStatus
	return a != nil && ((a.LastRunAgainstSeed != nil && !a.DistanceSupported) || (a.Distance != nil && *a.Distance == fw.Spec.Distance))
}
