package firewall

import (
	"context"
	"errors"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// inventory is a NodeNetworks of fixed answers, by project and node CIDR.
type inventory struct {
	networks map[[2]string]string
	err      error
	asked    int
}

func (i *inventory) NodeNetwork(_ context.Context, project, nodeCIDR string) (string, error) {
	i.asked++
	if i.err != nil {
		return "", i.err
	}
	id, ok := i.networks[[2]string{project, nodeCIDR}]
	if !ok {
		return "", errors.New("there is none")
	}
	return id, nil
}

var _ = Describe("resolveNetworks", func() {
	shootWithNodes := func(nodes string) *gardencorev1beta1.Shoot {
		return &gardencorev1beta1.Shoot{Spec: gardencorev1beta1.ShootSpec{Networking: &gardencorev1beta1.Networking{Nodes: ptr.To(nodes)}}}
	}
	config := func() *firewallv1alpha1.FirewallExtensionConfig {
		return &firewallv1alpha1.FirewallExtensionConfig{Size: "s", Image: "i", Partition: "pa", Project: "p1", Networks: []string{"internet"}}
	}
	var (
		inv *inventory
		a   *actuator
	)
	BeforeEach(func() {
		inv = &inventory{networks: map[[2]string]string{{"p1", "10.10.0.0/16"}: "private-p1"}}
		a = &actuator{config: Config{NodeNetworks: inv}}
	})

	It("adds the node network found by the shoot's nodes, the nodes as internal prefixes and the metrics' network", func(ctx SpecContext) {
		cfg := config()
		cfg.Metrics = &firewallv1alpha1.AgentMetrics{}
		got, err := a.resolveNetworks(ctx, cfg, shootWithNodes("10.10.0.0/16"))
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Networks).To(Equal([]string{"internet", "private-p1"}))
		Expect(got.NodeNetwork).To(Equal("private-p1"))
		Expect(got.InternalPrefixes).To(Equal([]string{"10.10.0.0/16"}))
		Expect(got.Metrics.InternalNetwork).To(Equal("private-p1"))
		Expect(cfg.Networks).To(Equal([]string{"internet"}), "the decoded config is left as it was")
		Expect(cfg.Metrics.InternalNetwork).To(BeEmpty())
	})

	It("keeps what the shoot owner wrote, and does not add a network twice", func(ctx SpecContext) {
		cfg := config()
		cfg.NodeNetwork, cfg.InternalPrefixes = "mine", []string{"10.10.1.0/24"}
		got, err := a.resolveNetworks(ctx, cfg, shootWithNodes("10.10.0.0/16"))
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Networks).To(Equal([]string{"internet", "mine"}))
		Expect(got.InternalPrefixes).To(Equal([]string{"10.10.1.0/24"}))
		Expect(inv.asked).To(BeZero(), "an explicit node network is not looked up")

		cfg = config()
		cfg.Networks = []string{"private-p1", "internet"}
		got, err = a.resolveNetworks(ctx, cfg, shootWithNodes("10.10.0.0/16"))
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Networks).To(Equal([]string{"private-p1", "internet"}), "a providerConfig that names it already")
	})

	It("refuses, naming what it looked up, when the node network is not found; leaves a shoot without nodes as written", func(ctx SpecContext) {
		_, err := a.resolveNetworks(ctx, config(), shootWithNodes("10.99.0.0/16"))
		Expect(err).To(MatchError("providerConfig.nodeNetwork is unset: there is none"))

		got, err := a.resolveNetworks(ctx, config(), &gardencorev1beta1.Shoot{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Networks).To(Equal([]string{"internet"}))
		Expect(got.InternalPrefixes).To(BeEmpty())

		cfg := config()
		cfg.Networks = nil
		_, err = a.resolveNetworks(ctx, cfg, &gardencorev1beta1.Shoot{})
		Expect(err).To(MatchError(ContainSubstring("providerConfig.networks: Required value")))
	})

	It("checks the rules against the networks found", func(ctx SpecContext) {
		cfg := config()
		cfg.RateLimits = []firewallv1alpha1.RateLimit{{NetworkID: "private-p1", Rate: 10}}
		_, err := a.resolveNetworks(ctx, cfg, shootWithNodes("10.10.0.0/16"))
		Expect(err).NotTo(HaveOccurred())
		cfg.RateLimits = []firewallv1alpha1.RateLimit{{NetworkID: "private-p2", Rate: 10}}
		_, err = a.resolveNetworks(ctx, cfg, shootWithNodes("10.10.0.0/16"))
		Expect(err).To(MatchError(ContainSubstring(`providerConfig.rateLimits[0].networkID: Invalid value: "private-p2": not one of networks`)))
	})

	It("looks nothing up without a provider that can (the local provider)", func(ctx SpecContext) {
		a.config.NodeNetworks = nil
		got, err := a.resolveNetworks(ctx, config(), shootWithNodes("10.10.0.0/16"))
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Networks).To(Equal([]string{"internet"}))
		Expect(got.InternalPrefixes).To(Equal([]string{"10.10.0.0/16"}))
	})
})
