package validation_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
)

var _ = Describe("initialRules", func() {
	withRules := func(rules *firewallv1alpha1.PolicySpec) field.ErrorList {
		spec := validSpec()
		spec.InitialRules = rules
		return ValidateFirewallSpec(spec, field.NewPath("spec"))
	}
	port := func(proto string, p int32) firewallv1alpha1.PolicyPort {
		return firewallv1alpha1.PolicyPort{Protocol: proto, Port: ptr.To(p)}
	}

	It("accepts what the metal-api's rules hold: TCP or UDP, single ports, plain CIDRs", func() {
		Expect(withRules(&firewallv1alpha1.PolicySpec{
			Egress:  []firewallv1alpha1.EgressRule{{To: []firewallv1alpha1.IPBlock{{CIDR: "1.1.1.0/24"}, {CIDR: "2001:db8::/32"}}, Ports: []firewallv1alpha1.PolicyPort{port("UDP", 53), port("", 443)}}},
			Ingress: []firewallv1alpha1.IngressRule{{From: []firewallv1alpha1.IPBlock{{CIDR: "0.0.0.0/0"}}, Ports: []firewallv1alpha1.PolicyPort{port("TCP", 22)}}},
		})).To(BeEmpty())
	})

	It("refuses what the metal-api cannot hold, naming each field", func() {
		errs := withRules(&firewallv1alpha1.PolicySpec{
			Egress: []firewallv1alpha1.EgressRule{
				{To: []firewallv1alpha1.IPBlock{{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}, Ports: []firewallv1alpha1.PolicyPort{port("SCTP", 9)}},
				{To: []firewallv1alpha1.IPBlock{{CIDR: "1.1.1.0/24"}}},
				{To: []firewallv1alpha1.IPBlock{{CIDR: "1.1.1.0/24"}}, Ports: []firewallv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To[int32](80), EndPort: ptr.To[int32](90)}, {Protocol: "TCP"}}},
			},
		})
		Expect(errs).To(ConsistOf(
			fieldErr(field.ErrorTypeNotSupported, "spec.initialRules.egress[0].ports[0].protocol", "SCTP"),
			fieldErr(field.ErrorTypeForbidden, "spec.initialRules.egress[0].to[0].except", ""),
			fieldErr(field.ErrorTypeRequired, "spec.initialRules.egress[1].ports", ""),
			fieldErr(field.ErrorTypeForbidden, "spec.initialRules.egress[2].ports[0].endPort", ""),
			fieldErr(field.ErrorTypeRequired, "spec.initialRules.egress[2].ports[1].port", ""),
		))
	})

	It("validates them as a policy first", func() {
		Expect(withRules(&firewallv1alpha1.PolicySpec{Ingress: []firewallv1alpha1.IngressRule{{From: []firewallv1alpha1.IPBlock{{CIDR: "not-a-cidr"}}, Ports: []firewallv1alpha1.PolicyPort{port("TCP", 22)}}}})).
			To(ContainElement(HaveField("Field", "spec.initialRules.ingress[0].from[0].cidr")))
	})
})
