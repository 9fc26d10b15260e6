package snataddr_test

import (
	"net/netip"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/snataddr"
)

func build(rules ...fwv1alpha1.EgressRuleSNAT) *ruleset.Ruleset {
	rs, err := ruleset.Build(&fwv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.1.0/24"}, EgressRules: rules}, nil, nil)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return rs
}

var _ = Describe("FromRuleset", func() {
	It("returns the address of each SNAT rule on its interface, sorted, and none for masquerade", func() {
		Expect(snataddr.FromRuleset(build(
			fwv1alpha1.EgressRuleSNAT{Interface: "eth2", IPs: []string{"2001:db8::5", "192.0.2.5"}},
			fwv1alpha1.EgressRuleSNAT{Interface: "eth1", IPs: []string{"198.51.100.7"}},
			fwv1alpha1.EgressRuleSNAT{Interface: "eth3"},
		))).To(Equal([]snataddr.Address{
			{Interface: "eth1", Addr: netip.MustParseAddr("198.51.100.7")},
			{Interface: "eth2", Addr: netip.MustParseAddr("192.0.2.5")},
			{Interface: "eth2", Addr: netip.MustParseAddr("2001:db8::5")},
		}))
	})

	DescribeTable("refuses an address no interface may hold, naming the rule",
		func(ip, message string) {
			_, err := snataddr.FromRuleset(build(fwv1alpha1.EgressRuleSNAT{Interface: "eth1", IPs: []string{ip}}))
			Expect(err).To(MatchError(message))
		},
		Entry("loopback", "127.0.0.1", `SNAT rule snat:eth1-v4: address "127.0.0.1": not a unicast address an interface may hold`),
		Entry("unspecified", "::", `SNAT rule snat:eth1-v6: address "::": not a unicast address an interface may hold`),
		Entry("multicast", "ff02::1", `SNAT rule snat:eth1-v6: address "ff02::1": not a unicast address an interface may hold`),
		Entry("link-local", "169.254.1.1", `SNAT rule snat:eth1-v4: address "169.254.1.1": not a unicast address an interface may hold`),
	)
})
