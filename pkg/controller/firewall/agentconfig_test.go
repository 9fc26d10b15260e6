package firewall

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
)

var _ = Describe("agentConfig", func() {
	// The extension writes the agent's config; the agent must accept it, or a
	// new firewall would boot into an agent that refuses to start.
	It("is accepted by the agent's own loader", func() {
		raw, err := agentConfig("shoot--p--s", nil, nil, nil, false)
		Expect(err).NotTo(HaveOccurred())
		cfg, err := config.Parse(raw)
		Expect(err).NotTo(HaveOccurred(), "the agent refuses the extension's config:\n%s", raw)

		By("the firewall spec comes from the seed")
		Expect(cfg.Sources.Seed).NotTo(BeNil())
		Expect(cfg.Sources.Seed.Namespace).To(Equal("shoot--p--s"))
		Expect(cfg.Sources.Seed.BootstrapKubeconfig).To(Equal(agentconfigv1alpha1.BootstrapKubeconfigPath))
		Expect(cfg.Controllers.Firewall).To(Equal(&agentconfigv1alpha1.Controller{Source: agentconfigv1alpha1.SourceSeed}))

		By("the policies, Services and the monitor come from the shoot, reached through the seed's access secret")
		Expect(cfg.Sources.Shoot.AccessSecret).To(Equal(constants.ShootAccessSecretName))
		for name, c := range map[string]*agentconfigv1alpha1.Controller{"cwnp": cfg.Controllers.CWNP, "service": cfg.Controllers.Service, "monitor": cfg.Controllers.Monitor} {
			Expect(c).To(Equal(&agentconfigv1alpha1.Controller{Source: agentconfigv1alpha1.SourceShoot}), name)
		}

		By("no DNS proxy unless the providerConfig asks for one")
		Expect(cfg.DNS).To(BeNil())
	})

	It("carries the providerConfig's DNS proxy settings, which the agent accepts", func() {
		dns := &agentconfigv1alpha1.DNS{Upstreams: []string{"10.0.0.53", "2001:db8::53"}, MinTTL: &metav1.Duration{Duration: 30 * time.Second}, MaxSelectors: 500}
		raw, err := agentConfig("shoot--p--s", dns, nil, nil, false)
		Expect(err).NotTo(HaveOccurred())
		cfg, err := config.Parse(raw)
		Expect(err).NotTo(HaveOccurred(), "the agent refuses the extension's config:\n%s", raw)
		Expect(cfg.DNS).To(Equal(dns))
	})

	It("turns the drop log on when the operator deployed the receiver, with accepted connections as the providerConfig says", func() {
		Expect(dropLogConfig("", true)).To(BeNil(), "no receiver, nothing to send to")
		raw, err := agentConfig("shoot--p--s", nil, dropLogConfig("img", true), nil, false)
		Expect(err).NotTo(HaveOccurred())
		cfg, err := config.Parse(raw)
		Expect(err).NotTo(HaveOccurred(), "the agent refuses the extension's config:\n%s", raw)
		Expect(cfg.DropLog).To(Equal(&agentconfigv1alpha1.DropLog{LogAcceptedConnections: true}))
	})

	It("turns the agent's self-update on with the operator's key, which the machine gets as a file", func() {
		raw, err := agentConfig("shoot--p--s", nil, nil, nil, true)
		Expect(err).NotTo(HaveOccurred())
		cfg, err := config.Parse(raw)
		Expect(err).NotTo(HaveOccurred(), "the agent refuses the extension's config:\n%s", raw)
		Expect(cfg.Controllers.Firewall.SelfUpdate).To(Equal(&agentconfigv1alpha1.SelfUpdate{Enabled: true, PublicKeyFile: agentconfigv1alpha1.UpdatePublicKeyPath}))
		Expect(agentFiles(raw, []byte("pem"))).To(ConsistOf(
			firewallv1alpha1.UserdataContent{Path: agentconfigv1alpha1.ConfigPath, Content: string(raw)},
			firewallv1alpha1.UserdataContent{Path: agentconfigv1alpha1.UpdatePublicKeyPath, Content: "pem"}))

		raw, err = agentConfig("shoot--p--s", nil, nil, nil, false)
		Expect(err).NotTo(HaveOccurred())
		cfg, err = config.Parse(raw)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Controllers.Firewall.SelfUpdate).To(BeNil(), "no key, no self-update")
		Expect(agentFiles(raw, nil)).To(HaveLen(1))
	})

	It("carries the providerConfig's metrics, which the agent accepts", func() {
		metrics := &agentconfigv1alpha1.Metrics{InternalNetwork: "tenant-1", Port: 9100}
		raw, err := agentConfig("shoot--p--s", nil, nil, metrics, false)
		Expect(err).NotTo(HaveOccurred())
		cfg, err := config.Parse(raw)
		Expect(err).NotTo(HaveOccurred(), "the agent refuses the extension's config:\n%s", raw)
		Expect(cfg.Metrics).To(Equal(metrics))
	})
})
