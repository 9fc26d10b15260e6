package agent

import (
	"fmt"
	"net/netip"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

var _ = Describe("fqdnStatus", func() {
	It("says that names allow nothing without the DNS proxy, once per selector", func() {
		spec := &fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{
			{ToFQDNs: []fwv1alpha1.FQDNSelector{{MatchName: "api.github.com"}, {MatchName: "API.github.com."}}},
			{ToFQDNs: []fwv1alpha1.FQDNSelector{{MatchPattern: "*.s3.example.com"}}},
		}}
		const msg = "not enforced: the firewall runs no DNS proxy (dns in the firewall's providerConfig), so names allow nothing"
		Expect((&Agent{}).fqdnStatus(spec)).To(Equal([]fwv1alpha1.FQDNSelectorStatus{
			{MatchName: "api.github.com", Message: msg}, {MatchPattern: "*.s3.example.com", Message: msg},
		}))
	})

	It("lists at most 64 selectors and 16 addresses of each, and counts them all", func() {
		p := dnsproxy.New(dnsproxy.Options{})
		var (
			spec fwv1alpha1.PolicySpec
			sets []nftables.FQDNSetContent
		)
		for i := range fwv1alpha1.MaxStatusFQDNs + 6 {
			sel := fwv1alpha1.FQDNSelector{MatchName: fmt.Sprintf("n%d.example.com", i)}
			spec.Egress = append(spec.Egress, fwv1alpha1.EgressRule{ToFQDNs: []fwv1alpha1.FQDNSelector{sel}})
			set := nftables.FQDNSetContent{Name: ruleset.FQDNSetName(fmt.Sprintf("fqdn_%d", i), false)}
			for j := range 20 {
				set.Elements = append(set.Elements, nftables.FQDNElement{Addr: netip.AddrFrom4([4]byte{192, 0, 2, byte(100 - j)}), Timeout: time.Minute, Comment: sel.MatchName})
			}
			sets = append(sets, set)
		}
		p.Restore(sets)
		a := &Agent{dnsProxy: p, dnsConfig: &agentconfigv1alpha1.DNS{}}
		out := a.fqdnStatus(&spec)
		Expect(out).To(HaveLen(fwv1alpha1.MaxStatusFQDNs))
		Expect(out[0]).To(And(HaveField("Enforced", true), HaveField("AddressCount", int32(20)), HaveField("Addresses", HaveLen(fwv1alpha1.MaxStatusAddresses))))
		Expect(out[0].Addresses[0]).To(Equal("192.0.2.81"), "sorted: the lowest first")
	})
})
