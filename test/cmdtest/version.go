// Package cmdtest holds Ginkgo specs that every binary's command shares.
package cmdtest

import (
	"bytes"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"github.com/spf13/cobra"
)

// DescribeVersionFlag checks that `<binary> --version` prints the version the
// release build set in *version (with -ldflags -X), not one fixed when the
// command was written, and exits without running.
func DescribeVersionFlag(binary string, version *string, newCommand func() *cobra.Command) bool {
	return ginkgo.Describe("--version", func() {
		ginkgo.It("prints the version the build set and exits without running", func() {
			ginkgo.DeferCleanup(func(v string) { *version = v }, *version)
			*version = "v1.2.3-version-test"

			var out bytes.Buffer
			cmd := newCommand()
			cmd.SetOut(&out)
			cmd.SetArgs([]string{"--version"})
			gomega.Expect(cmd.Execute()).To(gomega.Succeed())
			gomega.Expect(out.String()).To(gomega.Equal(binary + " v1.2.3-version-test\n"))
		})
	})
}
