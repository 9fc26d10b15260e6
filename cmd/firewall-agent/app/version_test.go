package app_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/cmd/firewall-agent/app"
)

var _ = Describe("--version", func() {
	// The release build sets app.Version with -ldflags -X; the flag must print
	// that value, not one fixed when the command was written.
	It("prints the version the build set and exits without running", func() {
		DeferCleanup(func(v string) { app.Version = v }, app.Version)
		app.Version = "v1.2.3-version-test"

		var out bytes.Buffer
		cmd := app.NewCommand()
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"--version"})
		Expect(cmd.Execute()).To(Succeed())
		Expect(out.String()).To(Equal("firewall-agent v1.2.3-version-test\n"))
	})
})

var _ = Describe("--metrics-bind-address", func() {
	// The agent's table filters forwarded traffic, not the firewall's own
	// ports: by default the metrics must not answer on public interfaces.
	It("serves on the loopback by default", func() {
		flag := app.NewCommand().Flags().Lookup("metrics-bind-address")
		Expect(flag).NotTo(BeNil())
		Expect(flag.DefValue).To(Equal("127.0.0.1:2112"))
	})
})
