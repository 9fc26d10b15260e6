package metal_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
)

var _ = Describe("NodeNetwork", func() {
	It("finds the project's network by the shoot's node CIDR, as provider-metal's worker does, and asks again only after a while", func(ctx SpecContext) {
		opts := metalapi.Inventory(project, "p2")
		server := startServer(opts)
		provider := newProvider(server.URL, nil)

		id, err := provider.NodeNetwork(ctx, project, metalapi.PrivatePrefix(0))
		Expect(err).NotTo(HaveOccurred())
		Expect(id).To(Equal(metalapi.PrivateNetwork(project)))
		id, err = provider.NodeNetwork(ctx, "p2", metalapi.PrivatePrefix(1))
		Expect(err).NotTo(HaveOccurred())
		Expect(id).To(Equal(metalapi.PrivateNetwork("p2")))
		Expect(server.NetworkFinds()).To(Equal(2))

		By("a second reconcile takes the network found")
		id, err = provider.NodeNetwork(ctx, project, metalapi.PrivatePrefix(0))
		Expect(err).NotTo(HaveOccurred())
		Expect(id).To(Equal(metalapi.PrivateNetwork(project)))
		Expect(server.NetworkFinds()).To(Equal(2))
	})

	It("names what it looked up when there is not exactly one network, and when the metal-api does not answer", func(ctx SpecContext) {
		opts := metalapi.Inventory(project, "p2")
		opts.Networks = append(opts.Networks, metalapi.Network{ID: "private-p1-again", Prefix: "10.10.0.0/16", VRF: 4000, Private: true, ProjectID: project})
		server := startServer(opts)
		provider := newProvider(server.URL, nil)

		_, err := provider.NodeNetwork(ctx, "p2", "10.10.0.0/16")
		Expect(err).To(MatchError(`finding the network of project "p2" with prefix 10.10.0.0/16 in the metal-api: there is none`), "another project's network is not found")
		_, err = provider.NodeNetwork(ctx, project, metalapi.PrivatePrefix(0))
		Expect(err).To(MatchError(`finding the network of project "p1" with prefix 10.10.0.0/16 in the metal-api: there are 2 (private-p1, private-p1-again)`))

		server.SetDown(true)
		_, err = provider.NodeNetwork(context.WithoutCancel(ctx), "p2", metalapi.PrivatePrefix(1))
		Expect(err).To(MatchError(ContainSubstring(`finding the network of project "p2" with prefix 10.11.0.0/16`)))
		server.SetDown(false)
		id, err := provider.NodeNetwork(ctx, "p2", metalapi.PrivatePrefix(1))
		Expect(err).NotTo(HaveOccurred(), "a failed search is not kept")
		Expect(id).To(Equal(metalapi.PrivateNetwork("p2")))
	})
})
