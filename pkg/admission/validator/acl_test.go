package validator_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

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

	DescribeTable("refuses a second document and trailing content",
		func(raw, want string) {
			errs := validator.ValidateACLExtensions(shoot(extension("acl", raw)), validation.Limits{})
			Expect(errs).NotTo(BeEmpty())
			Expect(errs.ToAggregate().Error()).To(And(ContainSubstring("spec.extensions[0].providerConfig"), ContainSubstring(want)))
		},
		Entry("trailing content", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24"]}} {"rule":{}}`, "trailing content after the document"),
		Entry("a second YAML document", "rule: {action: ALLOW, type: remote_ip, cidrs: [1.2.3.4/24]}\n---\nrule: {}\n", "more than one document"),
	)

	// A Shoot with 1.09 MB of unknown fields in its acl providerConfig once
	// got a 129 MB error back.
	DescribeTable("answers a hostile providerConfig with a few KB",
		func(size int) {
			var b strings.Builder
			b.WriteString(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24"]}`)
			for i := 0; b.Len() < size; i++ {
				b.WriteString(`,"unknown-` + strconv.Itoa(i) + strings.Repeat("x", 1000) + `":"` + strings.Repeat("v", 1000) + `"`)
			}
			b.WriteString("}")
			s := shoot(extension("acl", b.String()))
			errs := validator.ValidateACLExtensions(s, validation.Limits{})
			Expect(errs).NotTo(BeEmpty())
			Expect(errs.ToAggregate().Error()).To(ContainSubstring("spec.extensions[0].providerConfig"))
			Expect(len(errs.ToAggregate().Error())).To(BeNumerically("<", 8192))

			raw, err := json.Marshal(s)
			Expect(err).NotTo(HaveOccurred())
			resp := (&validator.Validator{}).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Object: runtime.RawExtension{Raw: raw}}})
			Expect(resp.Allowed).To(BeFalse())
			body, err := json.Marshal(resp.AdmissionResponse)
			Expect(err).NotTo(HaveOccurred())
			Expect(len(body)).To(BeNumerically("<", 16384), "the admission response")
		},
		Entry("1 MB, over the size bound", 1<<20),
		Entry("just under the size bound", validation.MaxProviderConfigBytes-3000),
	)
})
