package agent_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
)

// Configs that were once accepted: an agent run with --once exited 0 and
// replaced the ruleset in force with one that had no allow and no SNAT rule
// left, and one config made the agent (root) write a kubeconfig anywhere.
var _ = Describe("the built binary with a config that would enforce nothing", func() {
	var (
		t       *topology
		cfgPath string
	)
	BeforeEach(func() {
		t = newTopology()
		cfgPath = filepath.Join(GinkgoT().TempDir(), "config.yaml")
		writeConfig(cfgPath, configYAML("", ""))
		serve(t.outside, "::", 8080)
		serve(t.outside, "::", 9090)
	})
	ruleset := func() string {
		out, err := t.fw.Exec("nft", "list", "ruleset")
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		return stripCounters(out)
	}
	seedConfig := func(kubeconfig string) string {
		return "sources:\n  seed: {kubeconfig: " + kubeconfig + ", namespace: shoot--p--s}\ncontrollers:\n  firewall: {source: seed}\n"
	}

	It("refuses it with --once, exits non-zero and keeps the ruleset in force", func() {
		out, err := exec.Command("ip", "netns", "exec", t.fw.Name, binary, "--last-good-ruleset", lastGoodPath(), "--config", cfgPath, "--once").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		expectAllowed(t.node, outsideV4, 8080)
		expectDropped(t.node, outsideV4, 9090)
		before := ruleset()

		bad := filepath.Join(filepath.Dir(cfgPath), "bad.yaml")
		for _, c := range []struct{ name, config, want string }{
			{"an empty file", "", "config: Required value: the config file is empty"},
			{"sources: null", "sources: null\n", "controllers: Required value"},
			{"a name alone", "name: fw\n", "controllers: Required value"},
			{"a file cut before its controllers", configYAML("", "")[:strings.Index(configYAML("", ""), "controllers:")], "controllers: Required value"},
			{"a file cut inside a rule", configYAML("", "")[:strings.Index(configYAML("", ""), "ports: [{protocol: TCP, port: 8080}]")+20], "not valid JSON or YAML"},
			{"a seed kubeconfig written outside the agent's folder", seedConfig("../../etc/cron.d/evil"),
				`sources.seed.kubeconfig: Invalid value: "../../etc/cron.d/evil": must be an absolute path`},
			{"a seed kubeconfig written outside the agent's folder", seedConfig("/etc/cron.d/evil"),
				`sources.seed.kubeconfig: Invalid value: "/etc/cron.d/evil": the agent writes this file: it must be inside ` + filepath.Dir(cfgPath)},
			{"a rate the kernel refuses", configYAML("", "\n      rateLimits: [{interface: ext0, rate: 17593}]"),
				"sources.static.firewall.rateLimits[0].rate: Invalid value: 17593: must be at most 17592 MiB/s"},
		} {
			By(c.name)
			writeConfig(bad, c.config)
			out, err := exec.Command("ip", "netns", "exec", t.fw.Name, binary, "--last-good-ruleset", lastGoodPath(), "--config", bad, "--once").CombinedOutput()
			Expect(err).To(HaveOccurred(), string(out))
			Expect(string(out)).To(ContainSubstring(c.want))
			Expect(ruleset()).To(Equal(before))
		}
		expectAllowed(t.node, outsideV4, 8080)
	})

	It("keeps the ruleset in force while running", func() {
		ctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		logs := gbytes.NewBuffer()
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", t.fw.Name, binary, "--last-good-ruleset", lastGoodPath(), "--config", cfgPath, "--poll-interval", "100ms", "--metrics-bind-address", "0")
		cmd.Stdout, cmd.Stderr = GinkgoWriter, logs
		Expect(cmd.Start()).To(Succeed())
		DeferCleanup(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
		})
		Eventually(logs).WithTimeout(10 * time.Second).Should(gbytes.Say("mode=full"))
		before := ruleset()

		for _, c := range []struct{ config, want string }{
			{"", "the config file is empty"},
			{"sources: null\n", "controllers: Required value"},
			{"name: fw\n", "controllers: Required value"},
		} {
			writeConfig(cfgPath, c.config)
			Eventually(logs).WithTimeout(5 * time.Second).Should(gbytes.Say("config changed but is invalid; keeping the ruleset in force.*" + c.want))
			Expect(ruleset()).To(Equal(before))
			expectAllowed(t.node, outsideV4, 8080)
		}
		Expect(cmd.ProcessState).To(BeNil(), "the agent keeps running")

		By("a valid config applies again")
		writeConfig(cfgPath, configYAML("      - to: [{cidr: 203.0.113.2/32}]\n        ports: [{port: 9090}]\n", ""))
		Eventually(logs).WithTimeout(5 * time.Second).Should(gbytes.Say("ruleset applied.*config changed"))
		expectAllowed(t.node, outsideV4, 9090)
	})
})
