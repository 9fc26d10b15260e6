package v1alpha1

// Routing makes the agent announce its Firewall's distance (spec.distance)
// to the switch fabric through the machine's FRR: an AS-path prepend per
// step on the EVPN routes it announces to the fabric's peer group. It needs
// the firewall controller reading the seed (where the distance is set).
// Without it the agent reports that it cannot announce a distance.
type Routing struct {
	// FRRConfig is FRR's configuration file the agent writes the distance
	// into; /etc/frr/frr.conf when empty.
	FRRConfig string `json:"frrConfig,omitempty"`
	// PeerGroup is the BGP peer group of the fabric in that file; FABRIC
	// (os-installer's) when empty.
	PeerGroup string `json:"peerGroup,omitempty"`
	// AnnounceBy is how a new distance reaches the fabric: AnnounceByReset
	// (the default) or AnnounceByUpdate.
	AnnounceBy string `json:"announceBy,omitempty"`
}

// How a new distance reaches the fabric.
const (
	// AnnounceByReset resets the sessions to the fabric, which then installs
	// the routes afresh: leaves whose FRR predates 10.3 (FRRouting/frr#18158)
	// lose the firewall's router MAC on an update of its EVPN routes. The
	// fabric routes around the firewall for the seconds of the reset.
	AnnounceByReset = "reset"
	// AnnounceByUpdate sends the new path as a BGP update (a soft refresh):
	// no session goes down, for leaves with FRR 10.3 or later.
	AnnounceByUpdate = "update"
)

// AnnounceByValues are the ways a new distance may reach the fabric.
var AnnounceByValues = []string{AnnounceByReset, AnnounceByUpdate}
