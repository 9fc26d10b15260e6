package config_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
)

var _ = Describe("Parse with a dropLog section", func() {
	shoot := "  shoot: {namespace: firewall, kubeconfig: /etc/firewall-agent/shoot.kubeconfig}"

	It("takes a bounded section with a shoot source", func() {
		cfg, err := config.Parse([]byte("name: fw\nsources:\n  static: {firewall: {internalPrefixes: [10.0.0.0/8]}}\n" + shoot +
			"\ncontrollers: {firewall: {source: static}}\ndropLog: {ratePerSecond: 500, logAcceptedConnections: true, receiverURL: \"https://10.0.1.5:8443/v1/events\"}\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.DropLog.WithDefaults().Group).To(Equal(uint16(10)))
		Expect(cfg.DropLog.WithDefaults().QueueSize).To(Equal(int32(10000)))
	})

	DescribeTable("refuses, naming field and value",
		func(section string, want string) {
			_, err := config.Parse([]byte("name: fw\nsources:\n  static: {firewall: {internalPrefixes: [10.0.0.0/8]}}\n" + shoot +
				"\ncontrollers: {firewall: {source: static}}\ndropLog: " + section + "\n"))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("a rate over the bound", "{ratePerSecond: 100001}", "dropLog.ratePerSecond: Invalid value: 100001: must be at most 100000"),
		Entry("a negative queue", "{queueSize: -1}", "dropLog.queueSize: Invalid value: -1"),
		Entry("a plain-text receiver", `{receiverURL: "http://10.0.1.5/v1/events"}`, `dropLog.receiverURL: Invalid value: "http://10.0.1.5/v1/events": must be an https URL`),
		Entry("a group out of range", "{group: 70000}", "dropLog.group"),
	)

	It("refuses a drop log without the shoot source whose credential it sends", func() {
		_, err := config.Parse([]byte("name: fw\nsources:\n  static: {firewall: {internalPrefixes: [10.0.0.0/8]}}\ncontrollers: {firewall: {source: static}}\ndropLog: {}\n"))
		Expect(err).To(MatchError(ContainSubstring("sources.shoot: Required value: dropLog sends the events with the agent's shoot credential")))
	})
})
