package cloudprofile_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/admission/cloudprofile"
)

var _ = Describe("Decode", func() {
	raw := func(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

	It("reads metal-stack's CloudProfileConfig, ignoring fields it does not mirror", func() {
		cfg, err := cloudprofile.Decode(raw(`{"apiVersion":"metal.provider.extensions.gardener.cloud/v1alpha1","kind":"CloudProfileConfig",
			"metalControlPlanes":{"prod":{"endpoint":"e","firewallImages":["i"],"partitions":{"p":{"firewallTypes":["s"],"networkIsolation":{}}}}}}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.MetalControlPlanes["prod"].FirewallImages).To(Equal([]string{"i"}))
		Expect(cfg.MetalControlPlanes["prod"].Partitions["p"].FirewallTypes).To(Equal([]string{"s"}))
	})

	DescribeTable("is nil for another provider's config, whatever its shape",
		func(s string) {
			cfg, err := cloudprofile.Decode(raw(s))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg).To(BeNil())
		},
		Entry("another kind", `{"apiVersion":"aws.provider.extensions.gardener.cloud/v1alpha1","kind":"CloudProfileConfig","metalControlPlanes":"x"}`),
		Entry("no type", `{"machineImages":[]}`),
		Entry("not an object", `[1]`),
		Entry("empty", ``),
	)

	It("is an error for a metal CloudProfileConfig that does not fit", func() {
		_, err := cloudprofile.Decode(raw(`{"apiVersion":"metal.provider.extensions.gardener.cloud/v1alpha1","kind":"CloudProfileConfig","metalControlPlanes":"x"}`))
		Expect(err).To(MatchError(ContainSubstring("spec.providerConfig (CloudProfileConfig)")))
	})
})
