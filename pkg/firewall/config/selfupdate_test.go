package config_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
)

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var _ = Describe("the self-update's config", func() {
	withUpdate := func(selfUpdate, agent string) string {
		return strings.NewReplacer("  firewall: {source: static}", "  firewall: {source: static, selfUpdate: "+selfUpdate+"}",
			"  static:\n", "  static:\n    agent: "+agent+"\n").Replace(valid)
	}
	release := "{version: v1.2.3, url: https://releases.example.com/firewall-agent, sha256: " + sha + "}"

	It("accepts MEP-16's shape with a key file, a health timeout and a release in the static source", func() {
		cfg, err := config.Parse([]byte(withUpdate("{enabled: true, publicKeyFile: /etc/firewall-agent/update.pub, healthTimeout: 30s}", release)))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Controllers.Firewall.SelfUpdate.HealthTimeout.Duration).To(Equal(30 * time.Second))
		Expect(cfg.Sources.Static.Agent.SHA256).To(Equal(sha))
	})

	DescribeTable("refuses, naming the field",
		func(selfUpdate, agent, message string) {
			_, err := config.Parse([]byte(withUpdate(selfUpdate, agent)))
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("a relative key file", "{enabled: true, publicKeyFile: update.pub}", release,
			`controllers.firewall.selfUpdate.publicKeyFile: Invalid value: "update.pub": must be an absolute path`),
		Entry("a health timeout of a second", "{enabled: true, healthTimeout: 1s}", release,
			`controllers.firewall.selfUpdate.healthTimeout: Invalid value: "1s": must be between 5s and 1h0m0s`),
		Entry("a release without digest", "{enabled: true}", "{version: v1.2.3, url: https://r.example.com/a}",
			`sources.static.agent.sha256: Invalid value: "": must be 64 lowercase hex digits`),
		Entry("a release from a file URL", "{enabled: true}", "{version: v1.2.3, url: file:///tmp/a, sha256: "+sha+"}",
			`sources.static.agent.url: Invalid value: "file:///tmp/a": must be an absolute http or https URL`),
		Entry("a release without version", "{enabled: true}", "{url: https://r.example.com/a, sha256: "+sha+"}",
			`sources.static.agent.version: Required value`),
	)

	It("refuses selfUpdate on another controller than the firewall's", func() {
		bad := strings.Replace(valid, "  cwnp:     {source: static}", "  cwnp:     {source: static, selfUpdate: {enabled: true}}", 1)
		_, err := config.Parse([]byte(bad))
		Expect(err).To(MatchError(ContainSubstring("controllers.cwnp.selfUpdate: Forbidden: only controllers.firewall updates the agent")))
	})
})
