package nftables_test

import (
	"fmt"
	"net/netip"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/test/netns"
)

// newNS creates a uniquely named namespace that is removed after the spec.
func newNS(prefix string) *netns.NS {
	if reason := netns.SkipReason(); reason != "" {
		Skip(reason)
	}
	ns, err := netns.New(fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), GinkgoParallelProcess()*1000+int(nextID())))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(ns.Delete)
	return ns
}

var id int32

func nextID() int32 { id++; return id }

// policies returns n egress items, the shape of a shoot with many small
// policies: each allows two networks (a /32 and a /31; IPv6 every fourth item)
// on two TCP ports, its own and 443. Addresses are spaced so that nothing
// merges.
func policies(n int) *fwv1alpha1.PolicySpec { return policiesOfShape(n, true) }

// policiesOfShape returns n egress items; narrow ones allow one /32 (/128) on
// one port each.
func policiesOfShape(n int, wide bool) *fwv1alpha1.PolicySpec {
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
