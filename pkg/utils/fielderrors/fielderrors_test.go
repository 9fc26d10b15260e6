package fielderrors_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
)

var _ = Describe("fielderrors", func() {
	path := field.NewPath("spec")

	It("keeps a short list as it is", func() {
		errs := field.ErrorList{field.Required(path.Child("a"), ""), field.Required(path.Child("b"), "")}
		Expect(fielderrors.Bound(errs, path)).To(Equal(errs))
	})

	It("cuts a long list and counts the rest", func() {
		var errs field.ErrorList
		for i := range 1000 {
			errs = append(errs, field.Required(path.Child("items").Index(i), ""))
		}
		bounded := fielderrors.Bound(errs, path)
		Expect(bounded).To(HaveLen(strict.MaxErrors + 1))
		Expect(bounded[:strict.MaxErrors]).To(Equal(errs[:strict.MaxErrors]))
		Expect(bounded[strict.MaxErrors].Error()).To(Equal("spec: Invalid value: and 990 more errors"))
	})

	It("carries the count of a part bounded before, and changes nothing bounded twice", func() {
		var part, all field.ErrorList
		for i := range 100 {
			part = append(part, field.Required(path.Child("part").Index(i), ""))
		}
		all = append(all, field.Required(path.Child("first"), ""))
		all = append(all, fielderrors.Bound(part, path.Child("part"))...)
		all = append(all, field.Required(path.Child("last"), ""))
		bounded := fielderrors.Bound(all, path)
		Expect(bounded).To(HaveLen(strict.MaxErrors + 1))
		Expect(bounded[0].Field).To(Equal("spec.first"))
		Expect(bounded[strict.MaxErrors].Error()).To(Equal("spec: Invalid value: and 92 more errors"), "90 of the part, one of it not kept, and last")
		Expect(fielderrors.Bound(bounded, path)).To(Equal(bounded))
	})

	It("quotes an excerpt of a long value", func() {
		long := strings.Repeat("x", 1<<20)
		for _, err := range []*field.Error{
			fielderrors.Invalid(path, long, "bad"),
			fielderrors.TooLong(path, long, 128),
			fielderrors.NotSupported(path, long, []string{"a"}),
			fielderrors.Duplicate(path, long),
		} {
			Expect(len(err.Error())).To(BeNumerically("<", 200))
			Expect(err.Error()).To(ContainSubstring(`"xxxx`))
			Expect(err.Error()).To(ContainSubstring("(1048576 bytes)"))
		}
		Expect(fielderrors.TooLong(path, long, 128).Error()).To(HaveSuffix("may not be more than 128 bytes"))
	})
})
