package lab_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/test/lab"
)

var _ = Describe("the firewall image recipe", func() {
	It("puts the agent where the units the userdata brings run it", func() {
		img, err := lab.RecipeImage(lab.RecipePath, "/tmp/firewall-agent")
		Expect(err).NotTo(HaveOccurred())
		Expect(img.Files).To(HaveKeyWithValue(agentconfigv1alpha1.BinaryPath, lab.File{Source: "/tmp/firewall-agent", Mode: 0o755}))
		Expect(img.Files).To(HaveLen(1))
	})
})
