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
