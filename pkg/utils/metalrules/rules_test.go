package metalrules_test

import (
	"github.com/metal-stack/metal-go/api/models"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalrules"
)

var _ = Describe("metal-api firewall rules", func() {
	port := func(proto string, p int32) fwv1alpha1.PolicyPort {
		return fwv1alpha1.PolicyPort{Protocol: proto, Port: ptr.To(p)}
	}

	Describe("FromPolicy", func() {
		It("splits each rule by protocol and address family, masked and without duplicate ports", func() {
			rules, err := FromPolicy(&fwv1alpha1.PolicySpec{
				Egress: []fwv1alpha1.EgressRule{{
					To:    []fwv1alpha1.IPBlock{{CIDR: "1.1.1.7/24"}, {CIDR: "2001:db8::1/32"}},
					Ports: []fwv1alpha1.PolicyPort{port("UDP", 53), port("", 443), port("TCP", 53), port("TCP", 443)},
				}},
				Ingress: []fwv1alpha1.IngressRule{{From: []fwv1alpha1.IPBlock{{CIDR: "0.0.0.0/0"}}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 22)}}},
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(rules.Egress).To(Equal([]*models.V1FirewallEgressRule{
				{Protocol: "tcp", Ports: []int32{53, 443}, To: []string{"1.1.1.0/24"}},
				{Protocol: "tcp", Ports: []int32{53, 443}, To: []string{"2001:db8::/32"}},
				{Protocol: "udp", Ports: []int32{53}, To: []string{"1.1.1.0/24"}},
				{Protocol: "udp", Ports: []int32{53}, To: []string{"2001:db8::/32"}},
			}))
			Expect(rules.Ingress).To(Equal([]*models.V1FirewallIngressRule{{Protocol: "tcp", Ports: []int32{22}, From: []string{"0.0.0.0/0"}, To: []string{}}}))
		})

		It("names the rule and the value it cannot express", func() {
			_, err := FromPolicy(&fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{
				{To: []fwv1alpha1.IPBlock{{CIDR: "1.1.1.0/24"}}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 80)}},
				{To: []fwv1alpha1.IPBlock{{CIDR: "::ffff:10.0.0.0/104"}}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 80)}},
			}})
			Expect(err).To(MatchError(And(HavePrefix(`egress[1]: cidr "::ffff:10.0.0.0/104"`), ContainSubstring("IPv4-mapped"))))
			_, err = FromPolicy(&fwv1alpha1.PolicySpec{Ingress: []fwv1alpha1.IngressRule{
				{From: []fwv1alpha1.IPBlock{{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 80)}},
			}})
			Expect(err).To(MatchError("ingress[0]: cidr 10.0.0.0/8: the metal-api's rules hold no exceptions"))
			_, err = FromPolicy(&fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{
				{To: []fwv1alpha1.IPBlock{{CIDR: "1.1.1.0/24"}}, Ports: []fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To[int32](80), EndPort: ptr.To[int32](90)}}},
			}})
			Expect(err).To(MatchError("egress[0]: the metal-api's rules hold single ports only"))
		})
	})

	Describe("ToPolicies", func() {
		It("gives one policy per rule, every port of the protocol when none are named", func() {
			policies, skipped := ToPolicies(&models.V1FirewallRules{
				Egress:  []*models.V1FirewallEgressRule{{Protocol: "", Ports: []int32{443}, To: []string{"1.1.1.0/24"}, Comment: "web"}},
				Ingress: []*models.V1FirewallIngressRule{{Protocol: "udp", From: []string{"0.0.0.0/0"}}},
			})
			Expect(skipped).To(BeEmpty())
			Expect(policies).To(Equal([]*fwv1alpha1.PolicySpec{
				{Description: "metal-api egress[0]: web", Egress: []fwv1alpha1.EgressRule{{To: []fwv1alpha1.IPBlock{{CIDR: "1.1.1.0/24"}}, Ports: []fwv1alpha1.PolicyPort{port("TCP", 443)}}}},
				{Description: "metal-api ingress[0]", Ingress: []fwv1alpha1.IngressRule{{From: []fwv1alpha1.IPBlock{{CIDR: "0.0.0.0/0"}}, Ports: []fwv1alpha1.PolicyPort{{Protocol: "UDP"}}}}},
			}))
		})

		It("skips, and says why, what it cannot enforce as written; the other rules stay", func() {
			policies, skipped := ToPolicies(&models.V1FirewallRules{
				Egress:  []*models.V1FirewallEgressRule{{Protocol: "icmp", To: []string{"1.1.1.0/24"}}, {Protocol: "tcp", Ports: []int32{22}, To: []string{"1.1.1.0/24"}}},
				Ingress: []*models.V1FirewallIngressRule{{Protocol: "tcp", Ports: []int32{22}, From: []string{"0.0.0.0/0"}, To: []string{"10.0.0.1/32"}}},
			})
			Expect(policies).To(HaveLen(1))
			Expect(policies[0].Description).To(Equal("metal-api egress[1]"))
			Expect(skipped).To(ConsistOf(
				Skipped{Rule: "egress[0]", Reason: `protocol "icmp" is neither tcp nor udp`},
				HaveField("Rule", "ingress[0]"),
			))
		})
	})
})
