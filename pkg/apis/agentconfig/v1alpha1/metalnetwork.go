package v1alpha1

import "strconv"

// MetalNetwork is the network with the given metal ID and VRF as a
// metal-stack firewall's kernel names it: packets from it arrive on the VRF
// device vrf<vrf>, packets to it leave by the VLAN interface vlan<vrf>
// (os-installer pkg/interfaces and pkg/nftables name them so, and its
// firewall rules match them; measured in the lab per netfilter hook).
func MetalNetwork(id string, vrf int64) Network {
	n := strconv.FormatInt(vrf, 10)
	return Network{ID: id, Interface: "vrf" + n, OutInterface: "vlan" + n}
}
