package validator_test

import (
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
})
