package app_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall-admission/app"
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
		Expect(out.String()).To(Equal("gardener-extension-firewall-admission v1.2.3-version-test\n"))
	})
})
