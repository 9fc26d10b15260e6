package config_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
)

var _ = Describe("Parse with a routing section", func() {
	seed := "name: fw\nsources:\n  seed: {namespace: shoot--p--s, kubeconfig: /etc/firewall-agent/seed.kubeconfig, bootstrapKubeconfig: /etc/firewall-agent/bootstrap.kubeconfig}\ncontrollers: {firewall: {source: seed}}\n"

	It("takes the defaults and FRR's own folder", func() {
		cfg, err := config.Parse([]byte(seed + "routing: {}\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Routing).NotTo(BeNil())
		_, err = config.Parse([]byte(seed + "routing: {frrConfig: /etc/frr/frr.conf, peerGroup: FABRIC}\n"))
		Expect(err).NotTo(HaveOccurred())
		for _, by := range []string{"reset", "update"} {
			cfg, err = config.Parse([]byte(seed + "routing: {announceBy: " + by + "}\n"))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Routing.AnnounceBy).To(Equal(by))
		}
	})

	DescribeTable("refuses, naming field and value",
		func(cfg string, want string) {
			_, err := config.Parse([]byte(cfg))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("a file outside FRR's folder", seed+"routing: {frrConfig: /etc/shadow}\n", `routing.frrConfig: Invalid value: "/etc/shadow": must be a file in /etc/frr`),
		Entry("a way out of it", seed+"routing: {frrConfig: /etc/frr/../shadow}\n", `routing.frrConfig: Invalid value: "/etc/frr/../shadow": must be a clean path`),
		Entry("a relative path", seed+"routing: {frrConfig: frr.conf}\n", `routing.frrConfig: Invalid value: "frr.conf": must be an absolute path`),
		Entry("a peer group FRR would read as two words", seed+"routing: {peerGroup: \"FABRIC out\"}\n", `routing.peerGroup: Invalid value: "FABRIC out"`),
		Entry("a way of announcing the agent does not know", seed+"routing: {announceBy: withdraw}\n", `routing.announceBy: Unsupported value: "withdraw": supported values: "reset", "update"`),
		Entry("no seed, which sets the distance",
			"name: fw\nsources:\n  static: {firewall: {internalPrefixes: [10.0.0.0/8]}}\ncontrollers: {firewall: {source: static}}\nrouting: {}\n",
			"controllers.firewall.source: Required value: routing announces the distance the seed's Firewall sets"),
	)
})
