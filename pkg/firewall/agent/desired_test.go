package agent_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

var _ = Describe("Desired", func() {
	const seedConfig = `
sources:
  seed: {kubeconfig: /etc/firewall-agent/seed.kubeconfig, namespace: shoot--p--s}
controllers:
  firewall: {source: seed}
networks: [{id: internet, interface: vrf104009}]
`
	fromSeed := func(networkID string) *fwv1alpha1.FirewallTrafficSpec {
		return &fwv1alpha1.FirewallTrafficSpec{
			InternalPrefixes: []string{"10.0.1.0/24"},
			EgressRules:      []fwv1alpha1.EgressRuleSNAT{{NetworkID: networkID, IPs: []string{"192.0.2.1"}}},
			RateLimits:       []fwv1alpha1.RateLimit{{NetworkID: networkID, Rate: 10}},
		}
	}

	It("puts the machine's interface where a Firewall from the seed names a network", func() {
		cfg, err := config.Parse([]byte(seedConfig))
		Expect(err).NotTo(HaveOccurred())
		rs, err := agent.Desired(cfg, agent.Inputs{Seed: fromSeed("internet")})
		Expect(err).NotTo(HaveOccurred())
		Expect(ruleset.Render(rs)).To(And(
			ContainSubstring(`oifname "vrf104009"`), ContainSubstring(`snat ip to 192.0.2.1`),
			ContainSubstring(`iifname "vrf104009"`),
		))
	})

	It("refuses a network the machine has no interface for, instead of matching every interface", func() {
		cfg, err := config.Parse([]byte(seedConfig))
		Expect(err).NotTo(HaveOccurred())
		_, err = agent.Desired(cfg, agent.Inputs{Seed: fromSeed("underlay")})
		Expect(err).To(MatchError(`egressRules[0].networkID "underlay": no interface for this network in the config's networks`))
	})
})
