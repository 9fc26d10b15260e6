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

// policies returns n egress items, each one /32 (IPv4, or IPv6 every fourth)
// on one TCP port, the shape of a shoot with many small policies.
func policies(n int) *fwv1alpha1.PolicySpec {
	spec := &fwv1alpha1.PolicySpec{}
	for i := range n {
		cidr := netip.AddrFrom4([4]byte{100, byte(i >> 16), byte(i >> 8), byte(i)}).String() + "/32"
		if i%4 == 3 {
			cidr = fmt.Sprintf("2001:db8::%x:%x/128", i>>16, i&0xffff)
		}
		spec.Egress = append(spec.Egress, fwv1alpha1.EgressRule{
			To:    []fwv1alpha1.IPBlock{{CIDR: cidr}},
			Ports: []fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To(int32(1000 + i%5000))}},
		})
	}
	return spec
}
