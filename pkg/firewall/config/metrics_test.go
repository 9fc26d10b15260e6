package config_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
)

var _ = Describe("the metrics section", func() {
	const base = `sources: {static: {firewall: {internalPrefixes: ["10.0.1.0/24"]}}}
controllers: {firewall: {source: static}}
networks: [{id: shoot-net, interface: vrf3981}]
`
	It("takes a network and defaults the port", func() {
		cfg, err := config.Parse([]byte(base + "metrics: {internalNetwork: shoot-net}\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Metrics.ListenPort()).To(Equal(uint16(2112)))
	})

	DescribeTable("refuses, naming the field and the value",
		func(metrics, want string) {
			_, err := config.Parse([]byte(base + metrics))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("no network", "metrics: {port: 9100}\n", "metrics.internalNetwork: Required value"),
		Entry("the DNS proxy's port", "dns: {port: 9100}\nmetrics: {internalNetwork: shoot-net, port: 9100}\n",
			`metrics.port: Invalid value: "9100": the DNS proxy listens on port 9100`),
		Entry("a port beyond 65535", "metrics: {internalNetwork: shoot-net, port: 70000}\n", "metrics.port"),
	)
})
