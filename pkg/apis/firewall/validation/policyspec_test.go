package validation_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
)

var _ = Describe("ValidatePolicySpec", func() {
	path := field.NewPath("spec")

	It("accepts a valid spec, IPv4 and IPv6", func() {
		spec := &fwv1alpha1.PolicySpec{
			Egress: []fwv1alpha1.EgressRule{{
				To:    []fwv1alpha1.IPBlock{{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8"}}, {CIDR: "2001:db8::/32", Except: []string{"2001:db8::/64"}}},
				Ports: []fwv1alpha1.PolicyPort{{Port: ptr.To(int32(443))}, {Protocol: "UDP", Port: ptr.To(int32(1)), EndPort: ptr.To(int32(65535))}, {Protocol: "SCTP"}},
			}},
			Ingress: []fwv1alpha1.IngressRule{{From: []fwv1alpha1.IPBlock{{CIDR: "198.51.100.0/24"}}}},
		}
		Expect(ValidatePolicySpec(spec, path)).To(BeEmpty())
	})

	It("collects every error with its path and value", func() {
		spec := &fwv1alpha1.PolicySpec{
			Egress: []fwv1alpha1.EgressRule{{
				To:    []fwv1alpha1.IPBlock{{CIDR: "10.0.0/8"}, {CIDR: "10.0.0.0/16", Except: []string{"10.1.0.0/24", "10.0.0.0/8"}}},
				Ports: []fwv1alpha1.PolicyPort{{Protocol: "ICMP"}, {Port: ptr.To(int32(80)), EndPort: ptr.To(int32(79))}, {Port: ptr.To(int32(70000))}},
			}},
		}
		errs := ValidatePolicySpec(spec, path)
		Expect(errs.ToAggregate().Error()).To(And(
			ContainSubstring(`spec.egress[0].to[0].cidr: Invalid value: "10.0.0/8": invalid CIDR`),
			ContainSubstring(`spec.egress[0].to[1].except[0]: Invalid value: "10.1.0.0/24": must lie inside cidr "10.0.0.0/16"`),
			ContainSubstring(`spec.egress[0].to[1].except[1]: Invalid value: "10.0.0.0/8"`),
			ContainSubstring(`spec.egress[0].ports[0].protocol: Unsupported value: "ICMP"`),
			ContainSubstring(`spec.egress[0].ports[1].endPort: Invalid value: 79: must not be below port 80`),
			ContainSubstring(`spec.egress[0].ports[2].port: Invalid value: 70000`),
		))
		Expect(errs).To(HaveLen(6))
	})
})
