package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/validation"
	fwvalidation "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
)

// These configs were accepted once, and an agent run with --once replaced
// the ruleset in force with one that had no allow and no SNAT rule left.
var _ = Describe("Parse refuses a config that would enforce nothing", func() {
	DescribeTable("naming what is missing",
		func(raw string, want ...string) {
			_, err := config.Parse([]byte(raw))
			Expect(err).To(HaveOccurred())
			for _, w := range want {
				Expect(err.Error()).To(ContainSubstring(w))
			}
		},
		Entry("an empty file", "", "config: Required value: the config file is empty"),
		Entry("sources: null", "sources: null\n", "controllers: Required value: enable the firewall, cwnp or service controller"),
		Entry("a name alone", "name: fw\n", "controllers: Required value"),
		Entry("a file cut before its controllers", valid[:strings.Index(valid, "controllers:")], "controllers: Required value"),
		Entry("a file cut inside a list", valid[:strings.Index(valid, `"fd00:1::/64"]`)], "config: Invalid value", "not valid JSON or YAML"),
		Entry("only the monitor", "sources: {shoot: {namespace: firewall, kubeconfig: /etc/firewall-agent/shoot.kubeconfig}}\ncontrollers: {monitor: {source: shoot}}\n",
			"controllers: Required value"),
		Entry("policies without the internal prefixes of the firewall controller", strings.Replace(valid, "  firewall: {source: static}\n", "", 1),
			"controllers.firewall: Required value: the policies of controllers.cwnp allow traffic from and to the internal prefixes"),
		Entry("the static firewall controller without its section",
			"sources: {static: {cwnp: {}}}\ncontrollers: {firewall: {source: static}, cwnp: {source: static}}\n",
			"sources.static.firewall: Required value: controllers.firewall reads it"),
		Entry("the static cwnp controller without its section",
			"sources: {static: {firewall: {internalPrefixes: [10.0.0.0/8]}}}\ncontrollers: {firewall: {source: static}, cwnp: {source: static}}\n",
			"sources.static.cwnp: Required value: controllers.cwnp reads it"),
		Entry("a bootstrap kubeconfig without a place for the seed kubeconfig", strings.Replace(valid, "kubeconfig: /etc/firewall-agent/seed.kubeconfig, ", "", 1),
			"sources.seed.kubeconfig: Required value"),
	)
})

var _ = Describe("Parse refuses names and paths that are not what they claim", func() {
	DescribeTable("naming the field and the value",
		func(old, replacement string, want ...string) {
			Expect(valid).To(ContainSubstring(old))
			_, err := config.Parse([]byte(strings.Replace(valid, old, replacement, 1)))
			Expect(err).To(HaveOccurred())
			for _, w := range want {
				Expect(err.Error()).To(ContainSubstring(w))
			}
			Expect(len(err.Error())).To(BeNumerically("<", 8192))
		},
		Entry("a name with a control character", "name: fw-1", `name: "fw-1\x07"`, `name: Invalid value: "fw-1\a": a lowercase RFC 1123 subdomain`),
		Entry("a name in upper case", "name: fw-1", "name: FW-1", `name: Invalid value: "FW-1"`),
		Entry("a seed kubeconfig outside the agent's folder", "kubeconfig: /etc/firewall-agent/seed.kubeconfig", "kubeconfig: /etc/cron.d/evil",
			`sources.seed.kubeconfig: Invalid value: "/etc/cron.d/evil": the agent writes this file: it must be inside /etc/firewall-agent, the folder of the config file`),
		Entry("a seed kubeconfig with ..", "kubeconfig: /etc/firewall-agent/seed.kubeconfig", "kubeconfig: /etc/firewall-agent/../../etc/cron.d/evil",
			`sources.seed.kubeconfig: Invalid value: "/etc/firewall-agent/../../etc/cron.d/evil": must be a clean path`),
		Entry("a relative seed kubeconfig", "kubeconfig: /etc/firewall-agent/seed.kubeconfig", "kubeconfig: ../../etc/cron.d/evil",
			`sources.seed.kubeconfig: Invalid value: "../../etc/cron.d/evil": must be an absolute path`),
		Entry("a bootstrap kubeconfig outside the agent's folder (replaced on delivery)", "bootstrapKubeconfig: /etc/firewall-agent/bootstrap.kubeconfig", "bootstrapKubeconfig: /root/.ssh/authorized_keys",
			`sources.seed.bootstrapKubeconfig: Invalid value: "/root/.ssh/authorized_keys": the agent writes this file`),
		Entry("the bootstrap kubeconfig where the seed kubeconfig is kept", "bootstrapKubeconfig: /etc/firewall-agent/bootstrap.kubeconfig", "bootstrapKubeconfig: /etc/firewall-agent/seed.kubeconfig",
			`sources.seed.bootstrapKubeconfig: Invalid value: "/etc/firewall-agent/seed.kubeconfig": the same file as sources.seed.kubeconfig`),
		Entry("a shoot kubeconfig written from the access secret outside the folder", "shoot: {namespace: firewall}",
			"shoot: {namespace: firewall, accessSecret: shoot-access-firewall-agent, kubeconfig: /etc/cron.d/evil}",
			`sources.shoot.kubeconfig: Invalid value: "/etc/cron.d/evil": the agent writes this file`),
		Entry("a relative shoot kubeconfig", "shoot: {namespace: firewall}", "shoot: {namespace: firewall, kubeconfig: shoot.kubeconfig}",
			`sources.shoot.kubeconfig: Invalid value: "shoot.kubeconfig": must be an absolute path`),
		Entry("a seed namespace that is a path", "namespace: shoot--p--s", "namespace: ../x", `sources.seed.namespace: Invalid value: "../x": not a namespace name`),
		Entry("a shoot namespace with a newline", "shoot: {namespace: firewall}", `shoot: {namespace: "fire\nwall"}`, `sources.shoot.namespace: Invalid value: "fire\nwall"`),
		Entry("an access secret that is no Secret name", "shoot: {namespace: firewall}",
			"shoot: {namespace: firewall, accessSecret: ../x, kubeconfig: /etc/firewall-agent/shoot.kubeconfig}", `sources.shoot.accessSecret: Invalid value: "../x"`),
		Entry("a rate the kernel refuses", "rate: 100", fmt.Sprintf("rate: %d", fwvalidation.MaxRateMiBps+1),
			`sources.static.firewall.rateLimits[0].rate: Invalid value: 17593: must be at most 17592 MiB/s`),
		Entry("two rate limits on one interface", "{interface: eth1, rate: 100}", "{interface: eth1, rate: 100}, {interface: eth1, rate: 5}",
			`sources.static.firewall.rateLimits[1].interface: Duplicate value: "eth1"`),
		Entry("a network ID with a newline", "controllers:\n", "networks: [{id: \"inter\\nnet\", interface: eth1}]\ncontrollers:\n", `networks[0].id: Invalid value: "inter\nnet"`),
		Entry("10,000 internal prefixes", `["10.0.1.0/24", "fd00:1::/64"]`, "["+strings.Repeat("10.0.1.0/24, ", 9999)+"10.0.1.0/24]",
			"sources.static.firewall.internalPrefixes: Too many: 10000: must have at most 1024 items"),
	)

	It("refuses two rate limits on one interface when one names it by its network", func() {
		bad := strings.NewReplacer("rateLimits: [{interface: eth1, rate: 100}]", "rateLimits: [{interface: eth1, rate: 100}, {networkID: internet, rate: 5}]",
			"controllers:\n", "networks: [{id: internet, interface: eth1}]\ncontrollers:\n").Replace(valid)
		_, err := config.Parse([]byte(bad))
		Expect(err).To(MatchError(ContainSubstring(`sources.static.firewall.rateLimits[1].networkID: Invalid value: "internet": its interface "eth1" has a rule already`)))
	})

	It("refuses it in the other order too: the network's rule first, the interface's second", func() {
		bad := strings.NewReplacer("rateLimits: [{interface: eth1, rate: 100}]", "rateLimits: [{networkID: internet, rate: 5}, {interface: eth1, rate: 100}]",
			"controllers:\n", "networks: [{id: internet, interface: eth1}]\ncontrollers:\n").Replace(valid)
		_, err := config.Parse([]byte(bad))
		Expect(err).To(MatchError(ContainSubstring(`sources.static.firewall.rateLimits[1].interface: Invalid value: "eth1": its interface "eth1" has a rule already`)))
	})

	It("refuses an identity key outside the agent's folder, or where another file is kept", func() {
		_, err := config.Parse([]byte(strings.Replace(valid, "namespace: shoot--p--s}", "namespace: shoot--p--s, identityKey: /etc/cron.d/evil}", 1)))
		Expect(err).To(MatchError(ContainSubstring(`sources.seed.identityKey: Invalid value: "/etc/cron.d/evil": the agent writes this file`)))
		_, err = config.Parse([]byte(strings.Replace(valid, "namespace: shoot--p--s}", "namespace: shoot--p--s, identityKey: /etc/firewall-agent/seed.kubeconfig}", 1)))
		Expect(err).To(MatchError(ContainSubstring(`sources.seed.identityKey: Invalid value: "/etc/firewall-agent/seed.kubeconfig": the same file as sources.seed.kubeconfig`)))
		_, err = config.Parse([]byte(strings.Replace(valid, "kubeconfig: /etc/firewall-agent/seed.kubeconfig", "kubeconfig: /etc/firewall-agent/agent.key", 1)))
		Expect(err).To(MatchError(ContainSubstring(`sources.seed.identityKey: Invalid value: "/etc/firewall-agent/agent.key": the same file as sources.seed.kubeconfig`)), "the default beside the kubeconfig counts too")
	})

	It("accepts the highest rate the kernel takes", func() {
		_, err := config.Parse([]byte(strings.Replace(valid, "rate: 100", fmt.Sprintf("rate: %d", fwvalidation.MaxRateMiBps), 1)))
		Expect(err).NotTo(HaveOccurred())
	})

	It("accepts a shoot kubeconfig anywhere when the agent only reads it", func() {
		_, err := config.Parse([]byte(strings.Replace(valid, "shoot: {namespace: firewall}", "shoot: {namespace: firewall, kubeconfig: /var/lib/admin/shoot.kubeconfig}", 1)))
		Expect(err).NotTo(HaveOccurred())
	})

	It("takes the folder of the config file as the agent's folder", func() {
		dir := GinkgoT().TempDir()
		inDir := strings.ReplaceAll(valid, "/etc/firewall-agent", dir)
		path := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(path, []byte(inDir), 0o600)).To(Succeed())
		cfg, err := config.Load(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Sources.Seed.Kubeconfig).To(Equal(filepath.Join(dir, "seed.kubeconfig")))

		_, err = config.ParseInDir([]byte(inDir), dir)
		Expect(err).NotTo(HaveOccurred())

		By("the same file in another folder")
		other := filepath.Join(GinkgoT().TempDir(), "config.yaml")
		Expect(os.WriteFile(other, []byte(inDir), 0o600)).To(Succeed())
		_, err = config.Load(other)
		Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("the agent writes this file: it must be inside %s, the folder of the config file", filepath.Dir(other)))))

		By("the default folder")
		_, err = config.Parse([]byte(inDir))
		Expect(err).To(MatchError(ContainSubstring("it must be inside /etc/firewall-agent")))
	})

	It("refuses a hostname that is no object name when name is not set", func() {
		errs := validation.ValidateName("Firewall_1", true)
		Expect(errs.ToAggregate().Error()).To(And(HavePrefix(`name: Invalid value: "Firewall_1": name is not set, and the hostname is no Kubernetes object name`),
			HaveSuffix("; set name")))
	})

	It("reports at most strict.MaxErrors errors, in a few KB", func() {
		bad := strings.Replace(valid, `["10.0.1.0/24", "fd00:1::/64"]`, "["+strings.Repeat(strings.Repeat("x", 5000)+", ", 1000)+"x]", 1)
		_, err := config.Parse([]byte(bad))
		Expect(err).To(MatchError(ContainSubstring("config: Invalid value: and 991 more errors")))
		Expect(strings.Count(err.Error(), "internalPrefixes[")).To(Equal(strict.MaxErrors))
		Expect(len(err.Error())).To(BeNumerically("<", 4096))
	})
})
