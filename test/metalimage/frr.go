package metalimage

import (
	"fmt"
	"slices"
	"strings"
)

// FRRConfPath is where the installer writes the FRR configuration.
const FRRConfPath = "/etc/frr/frr.conf"

// FRRVersion is what the rendered configuration says: the lab image's FRR
// (Debian 13's); metal-images' firewall image has FRR 10.4.1.
const FRRVersion = "10.3"

// FirewallFRR renders the firewall's /etc/frr/frr.conf as os-installer
// renders it (pkg/frr/frr.firewall.tpl, pkg/frr/routemap.go): BGP unnumbered
// to the fabric on lan0 and lan1 (peer group FABRIC, timers 2 8), EVPN with
// a VRF and L3VNI per network, and route leaking between the private primary
// network's VRF and the external ones: the private VRF imports the external
// networks' destination prefixes (the default route) and prefixes, but not
// the default route network's own addresses; an external VRF imports the
// private primary network's prefixes, marked no-export.
func FirewallFRR(a *Allocation) (string, error) {
	loopback, err := a.Loopback()
	if err != nil {
		return "", err
	}
	primary, ok := a.privatePrimary()
	if !ok {
		return "", fmt.Errorf("the allocation has no private primary network")
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# generated as metal-stack's os-installer renders it")
	w("frr version %s", FRRVersion)
	w("frr defaults datacenter")
	w("hostname %s", a.Hostname)
	w("!")
	w("log syslog informational")
	routed := a.routed()
	for _, n := range routed {
		w("!")
		w("vrf vrf%d", n.VRF)
		w(" vni %d", n.VRF)
		w(" exit-vrf")
	}
	for _, lan := range []string{"lan0", "lan1"} {
		w("!")
		w("interface %s", lan)
		w(" ipv6 nd ra-interval 6")
		w(" no ipv6 nd suppress-ra")
	}
	w("!")
	w("router bgp %d", a.ASN)
	w(" bgp router-id %s", loopback)
	w(" bgp bestpath as-path multipath-relax")
	w(" neighbor FABRIC peer-group")
	w(" neighbor FABRIC remote-as external")
	w(" neighbor FABRIC timers 2 8")
	w(" neighbor lan0 interface peer-group FABRIC")
	w(" neighbor lan1 interface peer-group FABRIC")
	w(" !")
	w(" address-family ipv4 unicast")
	w("  redistribute connected route-map LOOPBACKS")
	w("  neighbor FABRIC route-map only-self-out out")
	w(" exit-address-family")
	w(" !")
	w(" address-family ipv6 unicast")
	w("  redistribute connected route-map LOOPBACKS")
	w("  neighbor FABRIC route-map only-self-out out")
	w("  neighbor FABRIC activate")
	w(" exit-address-family")
	w(" !")
	w(" address-family l2vpn evpn")
	w("  neighbor FABRIC activate")
	w("  advertise-all-vni")
	w(" exit-address-family")
	w("!")
	var external []Network
	for _, n := range routed {
		if !n.Private {
			external = append(external, n)
		}
	}
	imports := map[int64][]string{}
	for _, n := range routed {
		switch {
		case n.VRF == primary.VRF:
			for _, e := range external {
				imports[n.VRF] = append(imports[n.VRF], fmt.Sprintf("vrf%d", e.VRF))
			}
		case !n.Private:
			imports[n.VRF] = []string{fmt.Sprintf("vrf%d", primary.VRF)}
		}
	}
	for _, n := range routed {
		w("router bgp %d vrf vrf%d", a.ASN, n.VRF)
		w(" bgp router-id %s", loopback)
		w(" bgp bestpath as-path multipath-relax")
		w(" !")
		w(" address-family ipv4 unicast")
		w("  redistribute connected")
		for _, v := range imports[n.VRF] {
			w("  import vrf %s", v)
		}
		w("  import vrf route-map vrf%d-import-map", n.VRF)
		w(" exit-address-family")
		w(" !")
		w(" address-family l2vpn evpn")
		w("  advertise ipv4 unicast")
		w(" exit-address-family")
		w("!")
	}
	// The prefix lists and route maps of the imports.
	seq := 100
	for _, n := range routed {
		order := 10
		switch {
		case n.VRF == primary.VRF:
			for _, e := range external {
				list := fmt.Sprintf("vrf%d-import-from-vrf%d", n.VRF, e.VRF)
				var lines []string
				for _, d := range e.DestinationPrefixes {
					lines = append(lines, fmt.Sprintf("ip prefix-list %s seq %d permit %s", list, seq, d))
					seq++
				}
				if def, ok := a.defaultRoute(); ok && def.VRF == e.VRF {
					for _, ip := range e.IPs {
						lines = append(lines, fmt.Sprintf("ip prefix-list %s seq %d deny %s/32 le 32", list, seq, ip))
						seq++
					}
				}
				for _, p := range e.Prefixes {
					lines = append(lines, fmt.Sprintf("ip prefix-list %s seq %d permit %s le 32", list, seq, p))
					seq++
				}
				for _, l := range lines {
					w("%s", l)
				}
				w("route-map vrf%d-import-map permit %d", n.VRF, order)
				w(" match source-vrf vrf%d", e.VRF)
				w(" match ip address prefix-list %s", list)
				order += 10
			}
		case !n.Private:
			// The private network's prefixes stay on the firewall
			// (no-export); the network's own prefixes announced from the
			// private VRF (load balancer addresses) go out.
			list := fmt.Sprintf("vrf%d-import-from-vrf%d-no-export", n.VRF, primary.VRF)
			for _, p := range primary.Prefixes {
				w("ip prefix-list %s seq %d permit %s le 32", list, seq, p)
				seq++
			}
			own := fmt.Sprintf("vrf%d-import-from-vrf%d", n.VRF, primary.VRF)
			for _, p := range n.Prefixes {
				w("ip prefix-list %s seq %d permit %s le 32", own, seq, p)
				seq++
			}
			w("route-map vrf%d-import-map permit %d", n.VRF, order)
			w(" match source-vrf vrf%d", primary.VRF)
			w(" match ip address prefix-list %s", list)
			w(" set community additive no-export")
			order += 10
			w("route-map vrf%d-import-map permit %d", n.VRF, order)
			w(" match source-vrf vrf%d", primary.VRF)
			w(" match ip address prefix-list %s", own)
			order += 10
		}
		w("route-map vrf%d-import-map deny %d", n.VRF, order)
		w("!")
	}
	w("route-map only-self-out permit 10")
	w(" match as-path SELF")
	w("route-map only-self-out deny 20")
	w("!")
	w("route-map LOOPBACKS permit 10")
	w(" match interface lo")
	w("!")
	w("bgp as-path access-list SELF permit ^$")
	w("!")
	w("line vty")
	w("!")
	return b.String(), nil
}

// networkVLANs gives every routed network the local VLAN ID of its L3VNI
// on the machine's bridge, in allocation order from 1000, as os-installer's
// interfaces do (pkg/interfaces: vlan IDs 1000 and up, one per VRF).
func networkVLANs(a *Allocation) map[int64]int {
	out := map[int64]int{}
	vrfs := []int64{}
	for _, n := range a.routed() {
		vrfs = append(vrfs, n.VRF)
	}
	for i, v := range slices.Compact(vrfs) {
		out[v] = 1000 + i
	}
	return out
}
