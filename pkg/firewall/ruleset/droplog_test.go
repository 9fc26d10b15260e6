package ruleset_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

var _ = Describe("WithNFLog", func() {
	It("sends the logged drop to the group with its context and a kernel rate limit, and logs new accepted connections in a later chain", func() {
		rs, err := Build(nil, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		before := Render(rs)
		Expect(before).To(ContainSubstring(`limit rate 10/second log prefix "firewall-agent drop: "`))

		logged := WithNFLog(rs, NFLog{Group: 7, RatePerSecond: 500, Accepted: true})
		Expect(Render(rs)).To(Equal(before), "the ruleset handed in stays as it was")
		text := Render(logged)
		Expect(text).To(ContainSubstring(`limit rate 500/second log prefix "drop forward default-deny" group 7`))
		Expect(text).NotTo(ContainSubstring("firewall-agent drop: "))
		Expect(text).To(ContainSubstring("chain log-accepted {\n\t\ttype filter hook forward priority 10; policy accept;"))
		Expect(text).To(ContainSubstring(`ct state new limit rate 500/second log prefix "accept forward new-connection" group 7`))

		Expect(Render(WithNFLog(rs, NFLog{Group: 7, RatePerSecond: 500}))).NotTo(ContainSubstring("log-accepted"))
		if os.Geteuid() == 0 {
			By("checking that nft accepts the output")
			file := filepath.Join(GinkgoT().TempDir(), "ruleset.nft")
			Expect(os.WriteFile(file, []byte(text), 0o600)).To(Succeed())
			out, err := exec.Command("unshare", "--net", "nft", "-c", "-f", file).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), strings.TrimSpace(string(out)))
		}
	})
})
