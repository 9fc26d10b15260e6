package app_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/cmd/firewall-agent/app"
	"github.com/metal-firewall/gardener-extension-firewall/test/cmdtest"
)

var _ = cmdtest.DescribeVersionFlag("firewall-agent", &app.Version, app.NewCommand)

var _ = Describe("--metrics-bind-address", func() {
	// The agent's table filters forwarded traffic, not the firewall's own
	// ports: by default the metrics must not answer on public interfaces.
	It("serves on the loopback by default", func() {
		flag := app.NewCommand().Flags().Lookup("metrics-bind-address")
		Expect(flag).NotTo(BeNil())
		Expect(flag.DefValue).To(Equal("127.0.0.1:2112"))
	})
})
