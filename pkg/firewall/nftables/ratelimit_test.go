package nftables_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// A rate limit above what the kernel takes once passed validation; the
// kernel refused the whole batch ("netlink receive: value too large"), and a
// Firewall that kept it made every later apply fail.
var _ = Describe("rate limits at the kernel's bound", func() {
	withRate := func(rate uint32) *fwv1alpha1.FirewallTrafficSpec {
		spec := fw.DeepCopy()
		spec.RateLimits = []fwv1alpha1.RateLimit{{Interface: "eth1", Rate: rate}}
		return spec
	}
	apply := func(p *nftables.Programmer, spec *fwv1alpha1.FirewallTrafficSpec) error {
		rs, err := ruleset.Build(spec, []*fwv1alpha1.PolicySpec{mixed}, nil)
		Expect(err).NotTo(HaveOccurred())
		_, err = p.Apply(rs)
		return err
	}

	It("applies the largest rate validation accepts, and validation refuses the smallest one the kernel refuses", func() {
		ns := newNS("fwa-rate")
		p := nftables.NewProgrammer(ns.Path())

		largest := withRate(validation.MaxRateMiBps)
		Expect(validation.ValidateFirewallTrafficSpec(largest, field.NewPath("spec"), false)).To(BeEmpty())
		Expect(apply(p, largest)).To(Succeed())
		Expect(list(ns, "chain", "inet", ruleset.TableName, "forward")).To(
			ContainSubstring(fmt.Sprintf(`iifname "eth1" limit rate over %d mbytes/second`, validation.MaxRateMiBps)))
		before := list(ns, "ruleset")

		smallestRefused := withRate(validation.MaxRateMiBps + 1)
		Expect(validation.ValidateFirewallTrafficSpec(smallestRefused, field.NewPath("spec"), false)).To(ConsistOf(
			PointTo(MatchFields(IgnoreExtras, Fields{"Type": Equal(field.ErrorTypeInvalid), "Field": Equal("spec.rateLimits[0].rate")}))))

		By("the bound is the kernel's: one MiB/s more is refused by it, and nothing changes")
		Expect(apply(p, smallestRefused)).To(MatchError(ContainSubstring("value too large")))
		Expect(list(ns, "ruleset")).To(Equal(before))

		By("a later valid change still applies")
		Expect(apply(p, withRate(100))).To(Succeed())
		Expect(list(ns, "chain", "inet", ruleset.TableName, "forward")).To(ContainSubstring("limit rate over 100 mbytes/second"))
	})
})
