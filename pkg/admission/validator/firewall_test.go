package validator_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/admission/validator"
)

var _ = Describe("ValidateFirewallExtensions", func() {
	const valid = `{"size":"c1-xlarge-x86","image":"firewall-ubuntu-3.0","partition":"p1","project":"p","networks":["internet"]}`

	It("accepts a valid firewall providerConfig", func() {
		Expect(validator.ValidateFirewallExtensions(shoot(extension("firewall", valid)))).To(BeEmpty())
	})

	It("accepts rules on networks it cannot know yet: the node network the seed finds", func() {
		Expect(validator.ValidateFirewallExtensions(shoot(extension("firewall", valid[:len(valid)-1]+`,"rateLimits":[{"networkID":"private","rate":1}]}`)))).To(BeEmpty())
	})

	It("accepts the DNS proxy's settings, which turn on toFQDNs", func() {
		Expect(validator.ValidateFirewallExtensions(shoot(extension("firewall", valid[:len(valid)-1]+`,"dns":{"upstreams":["10.0.0.53"]}}`)))).To(BeEmpty())
	})

	It("names the field of an unknown key in the second extension", func() {
		errs := validator.ValidateFirewallExtensions(shoot(extension("acl", `{}`), extension("firewall", `{"size":"s","imag":"x"}`)))
		Expect(errs.ToAggregate().Error()).To(ContainSubstring("spec.extensions[1].providerConfig"))
		Expect(errs.ToAggregate().Error()).To(ContainSubstring("imag"))
	})

	It("does not validate a disabled extension", func() {
		disabled := extension("firewall", `{"imag":"x"}`)
		disabled.Disabled = ptr.To(true)
		Expect(validator.ValidateFirewallExtensions(shoot(disabled))).To(BeEmpty())
	})

	DescribeTable("refuses what the strict decoder and the validation refuse, in a few KB",
		func(raw, want string) {
			errs := validator.ValidateFirewallExtensions(shoot(extension("firewall", raw)))
			Expect(errs).NotTo(BeEmpty())
			Expect(errs.ToAggregate().Error()).To(ContainSubstring(want))
			Expect(len(errs.ToAggregate().Error())).To(BeNumerically("<", 8192))
		},
		Entry("a key in the wrong case", valid[:len(valid)-1]+`,"SIZE":"x"}`, `unknown field "SIZE"`),
		Entry("trailing data", valid+`{}`, "trailing content after the document"),
		Entry("a networkID neither in networks nor the node network", valid[:len(valid)-1]+`,"nodeNetwork":"private","rateLimits":[{"networkID":"underlay","rate":1}]}`,
			`spec.extensions[0].providerConfig.rateLimits[0].networkID: Invalid value: "underlay": not one of networks`),
		Entry("a rate the kernel refuses", valid[:len(valid)-1]+`,"rateLimits":[{"interface":"eth1","rate":17593}]}`,
			`spec.extensions[0].providerConfig.rateLimits[0].rate: Invalid value: 17593`),
		Entry("a newline in size", strings.Replace(valid, "c1-xlarge-x86", `c1\nx`, 1), `spec.extensions[0].providerConfig.size: Invalid value: "c1\nx"`),
		Entry("a DNS resolver on the loopback", valid[:len(valid)-1]+`,"dns":{"upstreams":["127.0.0.53"]}}`,
			`spec.extensions[0].providerConfig.dns.upstreams[0]: Invalid value: "127.0.0.53": must be a unicast address the nodes reach through the firewall`),
		Entry("10,000 internal prefixes", valid[:len(valid)-1]+`,"internalPrefixes":[`+strings.Repeat(`"10.0.0.0/8",`, 9999)+`"10.0.0.0/8"]}`,
			"spec.extensions[0].providerConfig.internalPrefixes: Too many: 10000"),
		Entry("a create timeout shorter than a minute", valid[:len(valid)-1]+`,"createTimeout":"10s"}`,
			`spec.extensions[0].providerConfig.createTimeout: Invalid value: "10s": must be within [1m0s, 24h0m0s]`),
		Entry("a health timeout that is no duration", valid[:len(valid)-1]+`,"healthTimeout":"soon"}`,
			`spec.extensions[0].providerConfig.healthTimeout: Invalid value: "soon": must be a duration`),
		Entry("1 MB of unknown fields", valid[:len(valid)-1]+strings.Repeat(`,"x`+strings.Repeat("y", 1000)+`":1`, 1000)+`}`,
			"spec.extensions[0].providerConfig: Too long"),
	)
})
