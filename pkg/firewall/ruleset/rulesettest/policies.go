// Package rulesettest generates policies for the ruleset's and the
// programmer's tests and benchmarks.
package rulesettest

import (
	"fmt"
	"net/netip"
	"slices"

	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Policies returns one policy of n egress items, the shape of a shoot with
// many small policies. A wide item allows two networks (a /32 and a /31;
// IPv6 every fourth item) on two TCP ports, its own and 443; a narrow one
// allows the /32 (/128) on its own port. Addresses are spaced so that
// nothing merges.
func Policies(n int, wide bool) *fwv1alpha1.PolicySpec {
	spec := &fwv1alpha1.PolicySpec{}
	v4 := func(base [4]byte, i int) netip.Addr {
		b := netip.AddrFrom4(base).As4()
		u := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) + uint32(4*i)
		return netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)})
	}
	for i := range n {
		to := []fwv1alpha1.IPBlock{
			{CIDR: v4([4]byte{100, 64, 0, 0}, i).String() + "/32"},
			{CIDR: v4([4]byte{198, 18, 0, 0}, i).String() + "/31"},
		}
		if i%4 == 3 {
			to = []fwv1alpha1.IPBlock{
				{CIDR: fmt.Sprintf("2001:db8:1::%x:%x/128", (4*i)>>16, (4*i)&0xffff)},
				{CIDR: fmt.Sprintf("2001:db8:2::%x:%x/127", (4*i)>>16, (4*i)&0xffff)},
			}
		}
		ports := []fwv1alpha1.PolicyPort{
			{Protocol: "TCP", Port: ptr.To(int32(1000 + i%5000))},
			{Protocol: "TCP", Port: ptr.To(int32(443))},
		}
		if !wide {
			to, ports = to[:1], ports[:1]
		}
		spec.Egress = append(spec.Egress, fwv1alpha1.EgressRule{To: to, Ports: ports})
	}
	return spec
}

// OneCIDRChanged returns spec with the first CIDR of its first item replaced
// by 203.0.113.0/24 when changed, spec's content otherwise, as a copy that
// shares everything else: what the agent sees when one policy item changes.
// The replaced /32 sits on each of the item's ports, so one element per port
// is removed and one added.
func OneCIDRChanged(spec *fwv1alpha1.PolicySpec, changed bool) *fwv1alpha1.PolicySpec {
	out := *spec
	out.Egress = slices.Clone(spec.Egress)
	if changed {
		first := out.Egress[0]
		first.To = slices.Clone(first.To)
		first.To[0] = fwv1alpha1.IPBlock{CIDR: "203.0.113.0/24"}
		out.Egress[0] = first
	}
	return &out
}
