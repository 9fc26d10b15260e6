package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The leaf's place in the fabric.
const (
	// leafASN is out of the range the in-process metal-api gives machines
	// (4200000001 and up), as a real fabric's ASNs are out of its machines'.
	leafASN      = 4210000001
	leafLoopback = "10.0.0.1"
	// MaxFirewalls is how many firewall ports (swp1..) the leaf has.
	MaxFirewalls = 6
)

// vlanOf is the leaf's local VLAN of a VRF's L3VNI; the VRF's routing
// table has the same number.
func (l *Lab) vlanOf(vrf int64) int {
	if vrf == l.opts.TenantVRF {
		return 1000
	}
	return 1001
}

// leafFRR is the leaf's FRR configuration, after the leaf configuration
// metal-stack's metal-core renders for a switch (cmd/internal/switcher/
// templates/tpl/sonic_frr.tpl, test_data/lab/sonic_frr.conf): BGP unnumbered
// to the firewalls in the default VRF (peer group FIREWALL, timers 2 8,
// allowas-in 2, since the firewall announces back into the tenant VRF what
// it imported from the internet VRF), EVPN with an L3VNI per VRF, and only
// the firewall's VNIs sent to it. Unlike metal-stack's leaves, the node is
// a connected subnet of the tenant VRF, not a BGP peer, and the leaf is also
// the exit: a static default route in its internet VRF points to this host.
func (l *Lab) leafFRR() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	tenant, internet := l.opts.TenantVRF, l.opts.InternetVRF
	w("frr version 10.3")
	w("frr defaults datacenter")
	w("hostname leaf")
	// The updates the leaf receives, in its journal: when traffic moves,
	// they say which firewall announced what.
	w("log syslog debugging")
	w("debug bgp updates in")
	w("!")
	w("vrf vrf%d", tenant)
	w(" vni %d", tenant)
	w(" ip route %s/32 %s", LoadBalancerAddress, NodeAddress)
	w(" exit-vrf")
	w("!")
	w("vrf vrf%d", internet)
	w(" vni %d", internet)
	w(" ip route 0.0.0.0/0 %s", HostAddress)
	w(" exit-vrf")
	for i := 1; i <= MaxFirewalls; i++ {
		w("!")
		w("interface swp%d", i)
		w(" ipv6 nd ra-interval 6")
		w(" no ipv6 nd suppress-ra")
	}
	w("!")
	w("router bgp %d", leafASN)
	w(" bgp router-id %s", leafLoopback)
	w(" bgp bestpath as-path multipath-relax")
	w(" neighbor FIREWALL peer-group")
	w(" neighbor FIREWALL remote-as external")
	w(" neighbor FIREWALL timers 2 8")
	for i := 1; i <= MaxFirewalls; i++ {
		w(" neighbor swp%d interface peer-group FIREWALL", i)
	}
	w(" !")
	w(" address-family ipv4 unicast")
	w("  redistribute connected route-map LOOPBACKS")
	w("  neighbor FIREWALL allowas-in 2")
	w(" exit-address-family")
	w(" !")
	w(" address-family l2vpn evpn")
	w("  advertise-all-vni")
	w("  neighbor FIREWALL activate")
	w("  neighbor FIREWALL allowas-in 2")
	for i := 1; i <= MaxFirewalls; i++ {
		w("  neighbor swp%d route-map fw-swp%d-vni out", i, i)
	}
	w(" exit-address-family")
	w("!")
	for i := 1; i <= MaxFirewalls; i++ {
		w("route-map fw-swp%d-vni permit 10", i)
		w(" match evpn vni %d", tenant)
		w("route-map fw-swp%d-vni permit 11", i)
		w(" match evpn vni %d", internet)
	}
	w("!")
	for _, vrf := range []int64{tenant, internet} {
		w("router bgp %d vrf vrf%d", leafASN, vrf)
		w(" bgp router-id %s", leafLoopback)
		w(" bgp bestpath as-path multipath-relax")
		w(" !")
		w(" address-family ipv4 unicast")
		w("  redistribute connected")
		w("  redistribute static")
		w("  maximum-paths 8")
		w(" exit-address-family")
		w(" !")
		w(" address-family l2vpn evpn")
		w("  advertise ipv4 unicast")
		w(" exit-address-family")
		w("!")
	}
	w("route-map LOOPBACKS permit 10")
	w(" match interface lo")
	w("!")
	w("line vty")
	return b.String()
}

// leaf mounts the share and the image, and makes the lab machine's own
// network namespace the leaf: loopback (VTEP), VRFs with their L3VNIs on a
// VLAN-aware bridge (the same shape os-installer gives a firewall), the
// uplink in the internet VRF, the node's namespace in the tenant VRF, FRR.
func (l *Lab) leaf(ctx context.Context) error {
	if err := os.WriteFile(filepath.Join(l.opts.Share, "leaf-frr.conf"), []byte(l.leafFRR()), 0o644); err != nil {
		return err
	}
	var s strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&s, format+"\n", args...) }
	w("set -eu")
	w("mkdir -p /lab/share /lab/image /var/lib/lab")
	// The guest agent may answer before the kernel has probed the 9p
	// device: the mount then failed with ENOENT (fsconfig() failed: No such
	// file or directory). Each mount is tried until it holds, 30 s at most;
	// the last try says why.
	mount := func(at, cmd string) {
		w("for i in $(seq 300); do mountpoint -q %s || %s 2>/dev/null || true; mountpoint -q %s && break; sleep 0.1; done", at, cmd, at)
		w("mountpoint -q %s || %s", at, cmd)
	}
	mount("/lab/share", "mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576 lab /lab/share")
	mount("/lab/image", "mount -o ro,noload /dev/vdb /lab/image")
	w("ip addr add %s/32 dev lo", leafLoopback)
	w("ip link add bridge type bridge vlan_filtering 1 vlan_default_pvid 0")
	w("ip link set bridge up")
	for _, vrf := range []int64{l.opts.TenantVRF, l.opts.InternetVRF} {
		vlan := l.vlanOf(vrf)
		w("ip link add vrf%d type vrf table %d", vrf, vlan)
		w("ip link set vrf%d up", vrf)
		w("ip link add vni%d type vxlan id %d local %s dstport 4789 nolearning", vrf, vrf, leafLoopback)
		w("ip link set vni%d master bridge", vrf)
		w("bridge vlan add dev vni%d vid %d pvid untagged", vrf, vlan)
		w("ip link set vni%d up", vrf)
		w("bridge vlan add dev bridge vid %d self", vlan)
		w("ip link add link bridge name vlan%d type vlan id %d", vrf, vlan)
		w("ip link set vlan%d master vrf%d", vrf, vrf)
		w("ip link set vlan%d up", vrf)
	}
	w("ip link set eth0 master vrf%d", l.opts.InternetVRF)
	w("ip addr add %s/30 dev eth0", uplinkAddress)
	w("ip link set eth0 up")
	w("ip netns add node")
	w("ip link add node0 type veth peer name eth0 netns node")
	w("ip link set node0 master vrf%d", l.opts.TenantVRF)
	w("ip addr add %s/24 dev node0", nodeGateway)
	w("ip link set node0 up")
	w("ip -n node addr add %s/24 dev eth0", NodeAddress)
	w("ip -n node link set lo up")
	w("ip -n node link set eth0 up")
	w("ip -n node route add default via %s", nodeGateway)
	w("ip -n node addr add %s/32 dev lo", LoadBalancerAddress)
	w("cp /lab/share/leaf-frr.conf /etc/frr/frr.conf")
	w("systemctl restart frr")
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err := l.Run(ctx, s.String())
	return err
}
