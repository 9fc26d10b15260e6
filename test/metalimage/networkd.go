package metalimage

import (
	"fmt"
	"strings"
)

// NetworkdDir is where the installer writes systemd-networkd's files.
const NetworkdDir = "/etc/systemd/network"

// Networkd renders the firewall's systemd-networkd files as os-installer
// does (pkg/interfaces/templates, the firewall's in pkg/interfaces/test/
// firewall): the underlay address on lo; lan0 and lan1 carrying one VXLAN
// device per network; a VLAN-aware bridge; and per network a VRF device
// vrf<vrf>, a VXLAN device vni<vrf> on the bridge and an SVI vlan<vrf> in the
// VRF with the machine's addresses in that network, /32 each.
//
// One deviation: lo gets the underlay address only. The installer's file
// also lists 127.0.0.1/8, which lo holds anyway; systemd 252's networkd in
// a container fails on that line ("Numerical result out of range") and then
// spins at full CPU, so the lab leaves it out. The .link files that name
// lan0 and lan1 by MAC address need udev, which a container has not: the
// lab creates the links with those names.
func Networkd(a *Allocation) (map[string]string, error) {
	loopback, err := a.Loopback()
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	put := func(name string, lines ...string) {
		files[NetworkdDir+"/"+name] = "# generated as metal-stack's os-installer renders it\n" + strings.Join(lines, "\n") + "\n"
	}
	put("00-lo.network", "[Match]", "Name=lo", "", "[Address]", fmt.Sprintf("Address=%s/32", loopback))
	routed := a.routed()
	vlans := networkVLANs(a)
	for i, lan := range []string{"lan0", "lan1"} {
		lines := []string{"[Match]", "Name=" + lan, "", "[Network]", "IPv6AcceptRA=no"}
		for _, n := range routed {
			lines = append(lines, fmt.Sprintf("VXLAN=vni%d", n.VRF))
		}
		put(fmt.Sprintf("1%d-%s.network", i, lan), lines...)
	}
	put("20-bridge.netdev", "[NetDev]", "Name=bridge", "Kind=bridge", "MTUBytes=9000", "", "[Bridge]", "DefaultPVID=none", "VLANFiltering=yes")
	bridge := []string{"[Match]", "Name=bridge", "", "[Network]"}
	for _, n := range routed {
		bridge = append(bridge, fmt.Sprintf("VLAN=vlan%d", n.VRF))
	}
	for _, n := range routed {
		bridge = append(bridge, "", "[BridgeVLAN]", fmt.Sprintf("VLAN=%d", vlans[n.VRF]))
	}
	put("20-bridge.network", bridge...)
	for i, n := range routed {
		prefix := fmt.Sprintf("%d-", 30+i)
		comment := "# network: " + n.ID
		put(fmt.Sprintf("%ssvi-%d.netdev", prefix, n.VRF), comment, "[NetDev]", fmt.Sprintf("Name=vlan%d", n.VRF), "Kind=vlan", "", "[VLAN]", fmt.Sprintf("Id=%d", vlans[n.VRF]))
		svi := []string{comment, "[Match]", fmt.Sprintf("Name=vlan%d", n.VRF), "", "[Link]", "MTUBytes=9000", "", "[Network]", fmt.Sprintf("VRF=vrf%d", n.VRF)}
		for _, ip := range n.IPs {
			fam, err := family(ip + "/32")
			if err != nil {
				return nil, err
			}
			bits := 32
			if fam == "ip6" {
				bits = 128
			}
			svi = append(svi, fmt.Sprintf("Address=%s/%d", ip, bits))
		}
		put(fmt.Sprintf("%ssvi-%d.network", prefix, n.VRF), svi...)
		put(fmt.Sprintf("%svrf-%d.netdev", prefix, n.VRF), comment, "[NetDev]", fmt.Sprintf("Name=vrf%d", n.VRF), "Kind=vrf", "", "[VRF]", fmt.Sprintf("Table=%d", vlans[n.VRF]))
		put(fmt.Sprintf("%svrf-%d.network", prefix, n.VRF), comment, "[Match]", fmt.Sprintf("Name=vrf%d", n.VRF))
		put(fmt.Sprintf("%svxlan-%d.netdev", prefix, n.VRF), comment, "[NetDev]", fmt.Sprintf("Name=vni%d", n.VRF), "Kind=vxlan", "", "[VXLAN]",
			fmt.Sprintf("VNI=%d", n.VRF), fmt.Sprintf("Local=%s", loopback), "UDPChecksum=true", "MacLearning=false", "DestinationPort=4789")
		put(fmt.Sprintf("%svxlan-%d.network", prefix, n.VRF), comment, "[Match]", fmt.Sprintf("Name=vni%d", n.VRF), "", "[Link]", "MTUBytes=9000", "", "[Network]", "Bridge=bridge",
			"", "[BridgeVLAN]", fmt.Sprintf("PVID=%d", vlans[n.VRF]), fmt.Sprintf("EgressUntagged=%d", vlans[n.VRF]))
	}
	return files, nil
}
