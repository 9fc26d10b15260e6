package agent_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
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
networks: [{id: internet, interface: vrf104009, outInterface: vlan104009}]
`
	fromSeed := func(networkID string) *fwv1alpha1.FirewallTrafficSpec {
		return &fwv1alpha1.FirewallTrafficSpec{
			InternalPrefixes: []string{"10.0.1.0/24"},
			EgressRules:      []fwv1alpha1.EgressRuleSNAT{{NetworkID: networkID, IPs: []string{"192.0.2.1"}}},
			RateLimits:       []fwv1alpha1.RateLimit{{NetworkID: networkID, Rate: 10}},
		}
	}

	It("puts the machine's interface where a Firewall from the seed names a network: SNAT where packets leave, rate limits where they arrive", func() {
		cfg, err := config.Parse([]byte(seedConfig))
		Expect(err).NotTo(HaveOccurred())
		rs, err := agent.Desired(cfg, agent.Inputs{Seed: fromSeed("internet")})
		Expect(err).NotTo(HaveOccurred())
		Expect(ruleset.Render(rs)).To(And(
			ContainSubstring(`oifname "vlan104009"`), ContainSubstring(`snat ip to 192.0.2.1`),
			ContainSubstring(`iifname "vrf104009"`),
		))
		Expect(ruleset.Render(rs)).NotTo(ContainSubstring(`oifname "vrf104009"`), "postrouting sees the VLAN interface of a VRF, not the VRF device")
	})

	It("refuses a network the machine has no interface for, instead of matching every interface", func() {
		cfg, err := config.Parse([]byte(seedConfig))
		Expect(err).NotTo(HaveOccurred())
		_, err = agent.Desired(cfg, agent.Inputs{Seed: fromSeed("underlay")})
		Expect(err).To(MatchError(`egressRules[0].networkID "underlay": no interface for this network in the config's networks`))
	})
})

var _ = Describe("Desired with toFQDNs", func() {
	const fqdnConfig = `
sources:
  static:
    firewall: {internalPrefixes: ["10.0.1.0/24"]}
    cwnp:
      egress:
      - toFQDNs: [{matchName: api.github.com}, {matchPattern: "*.s3.example.com"}]
        ports: [{port: 443}]
      - toFQDNs: [{matchName: API.github.com.}, {matchName: example.org}]
        to: [{cidr: 192.0.2.0/24}]
controllers:
  firewall: {source: static}
  cwnp: {source: static}
`
	parse := func(extra string) *agentconfigv1alpha1.Config {
		GinkgoHelper()
		cfg, err := config.Parse([]byte(fqdnConfig + extra))
		Expect(err).NotTo(HaveOccurred())
		return cfg
	}
	selectors := func(rs *ruleset.Ruleset) []string {
		var out []string
		for _, s := range rs.FQDNSelectors() {
			out = append(out, s.String())
		}
		return out
	}

	It("enforces them behind the DNS redirect when the proxy is configured", func() {
		rs, err := agent.Desired(parse("dns: {upstreams: [10.0.0.53], port: 5353}\n"), agent.Inputs{})
		Expect(err).NotTo(HaveOccurred())
		Expect(selectors(rs)).To(ConsistOf("matchName api.github.com", "matchPattern *.s3.example.com", "matchName example.org"))
		Expect(ruleset.Render(rs)).To(And(ContainSubstring("redirect to :5353"), ContainSubstring("elements = { 10.0.0.53 }")))
	})

	It("leaves them out without the proxy: nothing would fill their sets", func() {
		rs, err := agent.Desired(parse(""), agent.Inputs{})
		Expect(err).NotTo(HaveOccurred())
		Expect(selectors(rs)).To(BeEmpty())
		Expect(ruleset.Render(rs)).To(And(Not(ContainSubstring("fqdn")), Not(ContainSubstring("redirect"))))
		Expect(ruleset.Render(rs)).To(ContainSubstring("192.0.2.0/24"), "the rule's CIDRs stay")
	})

	It("enforces the first maxSelectors distinct selectors, in the order of the policies", func() {
		cfg := parse("dns: {upstreams: [10.0.0.53], maxSelectors: 2}\n")
		before := cfg.Sources.Static.CWNP.DeepCopy()
		rs, err := agent.Desired(cfg, agent.Inputs{})
		Expect(err).NotTo(HaveOccurred())
		Expect(selectors(rs)).To(ConsistOf("matchName api.github.com", "matchPattern *.s3.example.com"), "API.github.com. is the first one again")
		Expect(cfg.Sources.Static.CWNP).To(Equal(before), "the policies given are not changed")
	})
})
