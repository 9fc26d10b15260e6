package app_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall/app"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/envoyfilter"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/providerfirewall"
)

var _ = Describe("WebhookConfiguration", func() {
	It("points at the chart's Service in the extension's namespace, without a CA yet", func() {
		Expect(WebhookServiceName).To(Equal("gardener-extension-firewall"))
		cfg := WebhookConfiguration("extension-firewall-abc", 443)
		Expect(cfg.Name).To(Equal(envoyfilter.Name))
		Expect(cfg.Webhooks).To(HaveLen(2))
		cc := cfg.Webhooks[0].ClientConfig
		Expect(cc.URL).To(BeNil())
		Expect(cc.CABundle).To(BeEmpty(), "the certificate reconciler injects the CA it manages")
		Expect(cc.Service).NotTo(BeNil())
		Expect(cc.Service.Name).To(Equal(WebhookServiceName))
		Expect(cc.Service.Namespace).To(Equal("extension-firewall-abc"))
		Expect(*cc.Service.Port).To(Equal(int32(443)))
		Expect(*cc.Service.Path).To(Equal(envoyfilter.Path))
		// The scope stays the one the webhook package defines.
		Expect(cfg.Webhooks[0].MatchConditions).To(Equal(envoyfilter.MutatingWebhookConfiguration(cc).Webhooks[0].MatchConditions))

		By("the FirewallDeployment webhook behind the same Service, at its own path")
		fd := cfg.Webhooks[1]
		Expect(fd.Name).To(Equal(providerfirewall.Name))
		Expect(fd.ClientConfig.Service.Name).To(Equal(WebhookServiceName))
		Expect(*fd.ClientConfig.Service.Path).To(Equal(providerfirewall.Path))
		Expect(fd.NamespaceSelector).To(Equal(providerfirewall.Webhook(fd.ClientConfig).NamespaceSelector))
	})
})
