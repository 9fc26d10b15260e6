package validator_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/admission/validator"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
)

var _ = Describe("ValidateACLExtensions", func() {
	good := extension("acl", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24"]}}`)
	bad := extension("acl", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.400/24"]}}`)
	other := extension("shoot-dns-service", `{"whatever":1}`)

	It("accepts a valid acl providerConfig and ignores other extensions", func() {
		Expect(validator.ValidateACLExtensions(shoot(other, good), validation.Limits{})).To(BeEmpty())
	})

	It("names the field and the value of an invalid one", func() {
		errs := validator.ValidateACLExtensions(shoot(other, bad), validation.Limits{})
		Expect(errs).NotTo(BeEmpty())
		Expect(errs.ToAggregate().Error()).To(And(ContainSubstring("spec.extensions[1].providerConfig.rule.cidrs[0]"), ContainSubstring("1.2.3.400/24")))
	})

	It("does not validate a disabled extension", func() {
		disabled := bad
		disabled.Disabled = ptr.To(true)
		Expect(validator.ValidateACLExtensions(shoot(disabled), validation.Limits{})).To(BeEmpty())
	})
})
