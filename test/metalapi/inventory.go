package metalapi

import "fmt"

// What Inventory builds.
const (
	// Size is the one size; Image and NextImage the firewall images (a
	// rolling update changes one for the other).
	Size      = "c1-xlarge-x86"
	Image     = "firewall-ubuntu-3.0"
	NextImage = "firewall-ubuntu-3.1"
	// Internet is the external network; InternetVRF names the firewall's
	// interface into it (vrf104009).
	Internet    = "internet"
	InternetVRF = 104009
	// Underlay is the partition's underlay network.
	Underlay = "underlay"
	// ViewKey and EditKey are the HMAC keys of Metal-View and Metal-Edit.
	ViewKey = "view-key-for-tests"
	EditKey = "edit-key-for-tests"
)

// PrivateNetwork is the private network Inventory makes for a project.
func PrivateNetwork(project string) string { return "private-" + project }

// PrivatePrefix is the prefix of the i-th project's private network.
func PrivatePrefix(i int) string { return fmt.Sprintf("10.%d.0.0/16", 10+i%200) }

// PrivateVRF is the VRF of the i-th project's private network.
func PrivateVRF(i int) int64 { return int64(3981 + i) }

// Inventory is a partition with one size and two images, the internet
// (100.64.0.0/16 with NAT, out of the way of the test wiring's addresses), an
// underlay and a private network per project (10.<i>.0.0/16), and keys for
// Metal-View and Metal-Edit.
func Inventory(projects ...string) Options {
	o := Options{
		Keys:     map[string]string{"Metal-View": ViewKey, "Metal-Edit": EditKey},
		Sizes:    []string{Size},
		Images:   []string{Image, NextImage},
		Projects: projects,
		Networks: []Network{
			{ID: Internet, Prefix: "100.64.0.0/16", VRF: InternetVRF, NAT: true, DestinationPrefixes: []string{"0.0.0.0/0"}},
			{ID: Underlay, Prefix: "10.255.0.0/24", Underlay: true},
		},
	}
	for i, p := range projects {
		o.Networks = append(o.Networks, Network{ID: PrivateNetwork(p), Prefix: PrivatePrefix(i), VRF: PrivateVRF(i), Private: true, ProjectID: p})
	}
	return o
}
