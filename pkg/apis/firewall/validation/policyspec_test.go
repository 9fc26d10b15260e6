package validation_test

import (
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
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

	It("accepts toFQDNs by name and by pattern, alone or beside to", func() {
		spec := &fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{
			{ToFQDNs: []fwv1alpha1.FQDNSelector{{MatchName: "api.github.com"}, {MatchName: "Example.ORG."}, {MatchName: "_dmarc.example.com"}}},
			{ToFQDNs: []fwv1alpha1.FQDNSelector{{MatchPattern: "*.s3.example.com"}, {MatchPattern: "*"}, {MatchPattern: "ww*.example.*."}},
				To: []fwv1alpha1.IPBlock{{CIDR: "192.0.2.0/24"}}, Ports: []fwv1alpha1.PolicyPort{{Port: ptr.To(int32(443))}}},
			{ToFQDNs: []fwv1alpha1.FQDNSelector{{MatchName: strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)}}},
		}}
		Expect(ValidatePolicySpec(spec, path)).To(BeEmpty())
	})

	DescribeTable("refuses an invalid FQDN selector, naming its field and value",
		func(sel fwv1alpha1.FQDNSelector, want string) {
			spec := &fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{ToFQDNs: []fwv1alpha1.FQDNSelector{{MatchName: "ok.example.com"}, sel}}}}
			errs := ValidatePolicySpec(spec, path)
			Expect(errs).To(HaveLen(1))
			Expect(errs[0].Error()).To(Equal(want))
		},
		Entry("neither field", fwv1alpha1.FQDNSelector{},
			"spec.egress[0].toFQDNs[1]: Required value: matchName or matchPattern is required"),
		Entry("both fields", fwv1alpha1.FQDNSelector{MatchName: "a.example.com", MatchPattern: "*.example.com"},
			`spec.egress[0].toFQDNs[1].matchPattern: Invalid value: "*.example.com": set either matchName or matchPattern, not both`),
		Entry("a wildcard in a name", fwv1alpha1.FQDNSelector{MatchName: "*.example.com"},
			`spec.egress[0].toFQDNs[1].matchName: Invalid value: "*.example.com": a label may only contain letters, digits, '-' and '_'`),
		Entry("a blank", fwv1alpha1.FQDNSelector{MatchPattern: "* .example.com"},
			`spec.egress[0].toFQDNs[1].matchPattern: Invalid value: "* .example.com": a label may only contain letters, digits, '-', '_' and '*'`),
		Entry("a regular expression", fwv1alpha1.FQDNSelector{MatchPattern: "^.*\\.example\\.com$"},
			`spec.egress[0].toFQDNs[1].matchPattern: Invalid value: "^.*\\.example\\.com$": a label may only contain letters, digits, '-', '_' and '*'`),
		Entry("an empty label", fwv1alpha1.FQDNSelector{MatchName: "a..example.com"},
			`spec.egress[0].toFQDNs[1].matchName: Invalid value: "a..example.com": must be labels separated by single dots, with at most one dot at the end`),
		Entry("a leading dot", fwv1alpha1.FQDNSelector{MatchName: ".example.com"},
			`spec.egress[0].toFQDNs[1].matchName: Invalid value: ".example.com": must be labels separated by single dots, with at most one dot at the end`),
		Entry("the root", fwv1alpha1.FQDNSelector{MatchName: "."},
			`spec.egress[0].toFQDNs[1].matchName: Invalid value: ".": must be labels separated by single dots, with at most one dot at the end`),
		Entry("a long label", fwv1alpha1.FQDNSelector{MatchName: strings.Repeat("a", 64) + ".com"},
			`spec.egress[0].toFQDNs[1].matchName: Invalid value: "`+strings.Repeat("a", 64)+`... (68 bytes)": a label may not be longer than 63 characters`),
		Entry("a long name", fwv1alpha1.FQDNSelector{MatchName: strings.Repeat("a.", 127) + "a"},
			`spec.egress[0].toFQDNs[1].matchName: Invalid value: "`+strings.Repeat("a.", 32)+`... (255 bytes)": may not be more than 253 bytes`),
	)

	DescribeTable("bounds every list and string",
		func(spec *fwv1alpha1.PolicySpec, want string) {
			errs := ValidatePolicySpec(spec, path)
			Expect(errs).To(HaveLen(1))
			Expect(errs[0].Error()).To(Equal(want))
		},
		Entry("egress rules", &fwv1alpha1.PolicySpec{Egress: make([]fwv1alpha1.EgressRule, MaxPolicyRules+1)},
			"spec.egress: Too many: 65537: must have at most 65536 items"),
		Entry("ingress rules", &fwv1alpha1.PolicySpec{Ingress: make([]fwv1alpha1.IngressRule, MaxPolicyRules+1)},
			"spec.ingress: Too many: 65537: must have at most 65536 items"),
		Entry("blocks of a rule", &fwv1alpha1.PolicySpec{Ingress: []fwv1alpha1.IngressRule{{From: make([]fwv1alpha1.IPBlock, MaxPolicyPeers+1)}}},
			"spec.ingress[0].from: Too many: 65537: must have at most 65536 items"),
		Entry("excepts of a block", &fwv1alpha1.PolicySpec{Ingress: []fwv1alpha1.IngressRule{{From: []fwv1alpha1.IPBlock{{CIDR: "10.0.0.0/8", Except: make([]string, MaxPolicyExcepts+1)}}}}},
			"spec.ingress[0].from[0].except: Too many: 1025: must have at most 1024 items"),
		Entry("FQDN selectors of a rule", &fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{ToFQDNs: make([]fwv1alpha1.FQDNSelector, MaxPolicyFQDNs+1)}}},
			"spec.egress[0].toFQDNs: Too many: 1025: must have at most 1024 items"),
		Entry("ports of a rule", &fwv1alpha1.PolicySpec{Ingress: []fwv1alpha1.IngressRule{{From: []fwv1alpha1.IPBlock{{CIDR: "10.0.0.0/8"}}, Ports: make([]fwv1alpha1.PolicyPort, MaxPolicyPorts+1)}}},
			"spec.ingress[0].ports: Too many: 1025: must have at most 1024 items"),
		Entry("the description", &fwv1alpha1.PolicySpec{Description: strings.Repeat("d", MaxPolicyDescriptionLength+1)},
			`spec.description: Invalid value: "`+strings.Repeat("d", 64)+`... (4097 bytes)": may not be more than 4096 bytes`),
		Entry("a long CIDR, quoted as an excerpt", &fwv1alpha1.PolicySpec{Ingress: []fwv1alpha1.IngressRule{{From: []fwv1alpha1.IPBlock{{CIDR: strings.Repeat("1", 1<<20)}}}}},
			`spec.ingress[0].from[0].cidr: Invalid value: "`+strings.Repeat("1", 64)+`... (1048576 bytes)": invalid CIDR`),
		Entry("a long protocol, quoted as an excerpt", &fwv1alpha1.PolicySpec{Ingress: []fwv1alpha1.IngressRule{{From: []fwv1alpha1.IPBlock{{CIDR: "10.0.0.0/8"}}, Ports: []fwv1alpha1.PolicyPort{{Protocol: strings.Repeat("P", 1<<20)}}}}},
			`spec.ingress[0].ports[0].protocol: Unsupported value: "`+strings.Repeat("P", 64)+`... (1048576 bytes)": supported values: "TCP", "UDP", "SCTP"`),
	)

	It("reports at most strict.MaxErrors errors, in a few KB (they become the policy's status)", func() {
		spec := &fwv1alpha1.PolicySpec{Ingress: []fwv1alpha1.IngressRule{{From: slices.Repeat([]fwv1alpha1.IPBlock{{CIDR: strings.Repeat("x", 10000)}}, 5000)}}}
		errs := ValidatePolicySpec(spec, path)
		Expect(errs).To(HaveLen(strict.MaxErrors + 1))
		Expect(errs[strict.MaxErrors].Error()).To(Equal("spec: Invalid value: and 4990 more errors"))
		Expect(len(errs.ToAggregate().Error())).To(BeNumerically("<", 4096))
	})
})
