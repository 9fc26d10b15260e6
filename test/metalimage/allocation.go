package metalimage

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/metal-stack/metal-go/api/models"
	"k8s.io/utils/ptr"
)

// Network is one network of an allocation as the installer sees it.
type Network struct {
	ID                  string
	VRF                 int64
	Private, Underlay   bool
	Shared              bool
	NAT                 bool
	Prefixes, IPs       []string
	DestinationPrefixes []string
}

// Allocation is what the installer renders a firewall from: the allocation
// the metal-api holds (metal-go's v1 models).
type Allocation struct {
	Hostname string
	Project  string
	ASN      int64
	// Networks in the allocation's order.
	Networks      []Network
	FirewallRules *models.V1FirewallRules
	// UserData is the allocation's user_data, base64 as the metal-api holds it.
	UserData string
}

// FromFirewall reads the allocation of a firewall the metal-api answered.
func FromFirewall(fw *models.V1FirewallResponse) (*Allocation, error) {
	if fw == nil || fw.Allocation == nil {
		return nil, fmt.Errorf("the firewall has no allocation")
	}
	a := fw.Allocation
	out := &Allocation{Hostname: ptr.Deref(a.Hostname, ""), Project: ptr.Deref(a.Project, ""), FirewallRules: a.FirewallRules, UserData: a.UserData}
	for _, n := range a.Networks {
		if n == nil {
			continue
		}
		nw := Network{
			ID: ptr.Deref(n.Networkid, ""), VRF: ptr.Deref(n.Vrf, 0), Private: ptr.Deref(n.Private, false), Underlay: ptr.Deref(n.Underlay, false),
			NAT: ptr.Deref(n.Nat, false), Prefixes: n.Prefixes, IPs: n.Ips, DestinationPrefixes: n.Destinationprefixes,
		}
		// metal-lib pkg/net: the private primary network is unshared or
		// shared; a secondary shared one is another project's.
		nw.Shared = ptr.Deref(n.Networktype, "") == "privatesecondaryshared"
		if nw.Underlay && out.ASN == 0 {
			out.ASN = ptr.Deref(n.Asn, 0)
		}
		out.Networks = append(out.Networks, nw)
	}
	return out, nil
}

// privatePrimary is the firewall's own private network (os-installer
// pkg/network/network.go PrivatePrimaryNetwork: the child network).
func (a *Allocation) privatePrimary() (Network, bool) {
	for _, n := range a.Networks {
		if n.Private && !n.Shared {
			return n, true
		}
	}
	return Network{}, false
}

// underlay is the underlay network, which holds the machine's loopback IP.
func (a *Allocation) underlay() (Network, bool) {
	for _, n := range a.Networks {
		if n.Underlay {
			return n, true
		}
	}
	return Network{}, false
}

// defaultRoute is the network that holds the default route (os-installer
// pkg/network/network.go GetDefaultRouteNetwork).
func (a *Allocation) defaultRoute() (Network, bool) {
	for _, n := range a.Networks {
		if slices.Contains(n.DestinationPrefixes, "0.0.0.0/0") || slices.Contains(n.DestinationPrefixes, "::/0") {
			return n, true
		}
	}
	return Network{}, false
}

// DefaultRouteVRF names the VRF device of the default route's network.
func (a *Allocation) DefaultRouteVRF() string {
	if n, ok := a.defaultRoute(); ok {
		return fmt.Sprintf("vrf%d", n.VRF)
	}
	return ""
}

// TenantVRF names the VRF device of the private primary network.
func (a *Allocation) TenantVRF() string {
	if n, ok := a.privatePrimary(); ok {
		return fmt.Sprintf("vrf%d", n.VRF)
	}
	return ""
}

// Loopback is the machine's underlay address, its BGP router ID and VTEP.
func (a *Allocation) Loopback() (netip.Addr, error) {
	u, ok := a.underlay()
	if !ok || len(u.IPs) == 0 {
		return netip.Addr{}, fmt.Errorf("the allocation has no underlay address")
	}
	return netip.ParseAddr(u.IPs[0])
}

// routed are the networks that get a VRF on the machine: all but the underlay.
func (a *Allocation) routed() []Network {
	var out []Network
	for _, n := range a.Networks {
		if !n.Underlay && n.VRF != 0 {
			out = append(out, n)
		}
	}
	return out
}

func family(prefix string) (string, error) {
	p, err := netip.ParsePrefix(prefix)
	if err != nil {
		return "", err
	}
	if p.Addr().Is6() {
		return "ip6", nil
	}
	return "ip", nil
}
