package agent_test

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
)

// A reboot is simulated by deleting the agent's table: the kernel state of a
// fresh boot, before any unit ran.
var _ = Describe("a rebooted firewall", func() {
	var (
		t                  *topology
		cfgPath, lastGood  string
		reboot, bootStep   func() string
		expectLastGoodHeld func()
	)
	BeforeEach(func() {
		t = newTopology()
		dir := GinkgoT().TempDir()
		cfgPath = filepath.Join(dir, "config.yaml")
		lastGood = filepath.Join(dir, "state", "last-good-ruleset.json")
		writeConfig(cfgPath, configYAML("", ""))
		for _, port := range []int{8080, 9090} {
			serve(t.outside, "::", port)
		}
		for _, port := range []int{30080, 30081} {
			serve(t.node, "::", port)
		}
		reboot = func() string {
			GinkgoHelper()
			_, err := t.fw.Exec("nft", "delete", "table", "inet", "firewall-agent")
			Expect(err).NotTo(HaveOccurred())
			out, err := t.fw.Exec("nft", "list", "ruleset")
			Expect(err).NotTo(HaveOccurred())
			return out
		}
		bootStep = func() string {
			GinkgoHelper()
			out, err := exec.Command("ip", "netns", "exec", t.fw.Name, binary, "boot", "--last-good-ruleset", lastGood).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(out))
			return string(out)
		}
		expectLastGoodHeld = func() {
			GinkgoHelper()
			Expect(expectAllowed(t.node, outsideV4, 8080)).To(Equal(fwExtV4), "SNAT as before the reboot")
			expectDropped(t.node, outsideV4, 9090)
			expectAllowed(t.node, outsideV6, 8080)
			expectDropped(t.node, outsideV6, 9090)
			expectAllowed(t.outside, nodeV4, 30080)
			expectDropped(t.outside, nodeV4, 30081)
		}
	})

	It("forwards per the last good ruleset before any source is reachable", func() {
		a := &agent.Agent{ConfigPath: cfgPath, Applier: nftables.NewProgrammer(t.fw.Path()),
			Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil)), LastGoodPath: lastGood}
		_, err := a.ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		info, err := os.Stat(lastGood)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))

		Expect(reboot()).To(BeEmpty())
		By("without the boot step, a fresh kernel forwards everything")
		expectAllowed(t.node, outsideV4, 9090)

		By("the boot step, with no config and nothing else to ask")
		Expect(os.Remove(cfgPath)).To(Succeed())
		Expect(bootStep()).To(ContainSubstring("last good ruleset installed"))
		expectLastGoodHeld()

		By("run again on a kernel that holds the table, it changes nothing")
		before, err := t.fw.Exec("nft", "list", "table", "inet", "firewall-agent")
		Expect(err).NotTo(HaveOccurred())
		Expect(bootStep()).To(ContainSubstring("keeping it"))
		Expect(t.fw.Exec("nft", "list", "table", "inet", "firewall-agent")).To(Equal(before))

		By("the agent starting on the rebooted machine finds its rules in force")
		writeConfig(cfgPath, configYAML("", ""))
		p := startAgentProcess(t.fw, cfgPath)
		Expect(string(p.out.Contents())).To(ContainSubstring("mode=unchanged"))
		expectLastGoodHeld()
	})

	It("drops everything forwarded when there is no usable last good ruleset, until the agent applies", func() {
		for _, content := range []string{"", `{"version":1,"ruleset":{"Table":"firewall-agent","Sets":[`} {
			if content != "" {
				Expect(os.MkdirAll(filepath.Dir(lastGood), 0o700)).To(Succeed())
				Expect(os.WriteFile(lastGood, []byte(content), 0o600)).To(Succeed())
			}
			_, err := t.fw.Exec("nft", "add", "table", "inet", "firewall-agent")
			Expect(err).NotTo(HaveOccurred())
			Expect(reboot()).To(BeEmpty())
			out := bootStep()
			if content == "" {
				Expect(out).To(ContainSubstring("no last good ruleset; forwarding is closed"))
			} else {
				Expect(out).To(ContainSubstring("last good ruleset not usable"))
				Expect(out).To(ContainSubstring("unexpected EOF"))
			}
			Expect(t.fw.Exec("nft", "list", "ruleset")).To(ContainSubstring("chain forward-closed"))
			expectDropped(t.node, outsideV4, 8080)
			expectDropped(t.node, outsideV6, 8080)
			expectDropped(t.outside, nodeV4, 30080)
		}

		By("the agent's first apply replaces the closed table in one batch")
		p := startAgentProcess(t.fw, cfgPath)
		Expect(string(p.out.Contents())).To(ContainSubstring("mode=full"))
		Expect(t.fw.Exec("nft", "list", "ruleset")).NotTo(ContainSubstring("forward-closed"))
		expectLastGoodHeld()
	})
})
