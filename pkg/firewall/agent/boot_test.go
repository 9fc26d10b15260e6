package agent_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/lastgood"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

var _ = Describe("the last good ruleset and the boot step", func() {
	var (
		dir, cfgPath, lastGood string
		kernel                 *closedTableApplier
		logs                   *gbytes.Buffer
		log                    *slog.Logger
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		cfgPath = filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfgPath, []byte(cfg), 0o600)).To(Succeed())
		lastGood = filepath.Join(dir, "state", "last-good-ruleset.json")
		kernel = &closedTableApplier{tableCheckingApplier: &tableCheckingApplier{fakeApplier: &fakeApplier{}}}
		logs = gbytes.NewBuffer()
		log = slog.New(slog.NewTextHandler(logs, nil))
	})

	It("saves each applied ruleset, root-only, and boot installs it", func() {
		a := &agent.Agent{ConfigPath: cfgPath, Applier: kernel, Log: log, LastGoodPath: lastGood}
		_, err := a.ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		applied := kernel.last()
		Expect(applied).To(ContainSubstring("203.0.113.0/24 . tcp . 443"))
		info, err := os.Stat(lastGood)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		saved, err := lastgood.Load(lastGood)
		Expect(err).NotTo(HaveOccurred())
		Expect(ruleset.Render(saved)).To(Equal(applied))

		By("a reboot: the kernel holds no table")
		rebooted := &closedTableApplier{tableCheckingApplier: &tableCheckingApplier{fakeApplier: &fakeApplier{}}}
		Expect(agent.Boot(rebooted, lastGood, log)).To(Equal(agent.BootLastGood))
		Expect(rebooted.applied).To(Equal([]string{applied}))
	})

	It("does not save a refused apply", func() {
		kernel.failNext = true
		a := &agent.Agent{ConfigPath: cfgPath, Applier: kernel, Log: log, LastGoodPath: lastGood}
		_, err := a.ApplyOnce()
		Expect(err).To(MatchError(ContainSubstring("kernel says no")))
		Expect(lastGood).NotTo(BeAnExistingFile())
	})

	It("closes forwarding when there is no last good ruleset, or it is unusable", func() {
		closed := ruleset.Render(ruleset.Closed())
		Expect(closed).To(ContainSubstring("policy drop"))
		Expect(agent.Boot(kernel, lastGood, log)).To(Equal(agent.BootClosed))
		Expect(kernel.applied).To(Equal([]string{closed}))

		Expect(os.MkdirAll(filepath.Dir(lastGood), 0o700)).To(Succeed())
		Expect(os.WriteFile(lastGood, []byte(`{"version":1,"ruleset":{"Table":"firewall-ag`), 0o600)).To(Succeed())
		kernel.applied = nil
		Expect(agent.Boot(kernel, lastGood, log)).To(Equal(agent.BootClosed))
		Expect(kernel.applied).To(Equal([]string{closed}))
		Expect(logs).To(gbytes.Say("last good ruleset not usable"))

		By("a ruleset the kernel refuses")
		Expect(lastgood.Save(lastGood, ruleset.Closed())).To(Succeed())
		kernel.applied, kernel.failNext = nil, true
		Expect(agent.Boot(kernel, lastGood, log)).To(Equal(agent.BootClosed))
		Expect(kernel.applied).To(Equal([]string{closed}))
	})

	It("keeps a table the kernel holds already", func() {
		Expect(lastgood.Save(lastGood, ruleset.Closed())).To(Succeed())
		kernel.exists = true
		Expect(agent.Boot(kernel, lastGood, log)).To(Equal(agent.BootKept))
		Expect(kernel.applied).To(BeEmpty())
	})

	It("replaces the closed table, as nftables.service loads it with the image's rules, by the last good ruleset", func() {
		rs, err := ruleset.Build(nil, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(lastgood.Save(lastGood, rs)).To(Succeed())
		kernel.exists, kernel.closed = true, true
		Expect(agent.Boot(kernel, lastGood, log)).To(Equal(agent.BootLastGood))
		Expect(kernel.applied).To(Equal([]string{ruleset.Render(rs)}))
	})

	It("does the boot step itself when it starts on a kernel without its table", func() {
		rs, err := ruleset.Build(nil, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(lastgood.Save(lastGood, rs)).To(Succeed())
		ctx, cancel := context.WithCancel(context.Background())
		a := &agent.Agent{ConfigPath: cfgPath, Applier: kernel, Log: log, LastGoodPath: lastGood,
			PollInterval: 10 * time.Millisecond, ResyncInterval: time.Hour}
		done := make(chan error)
		go func() { done <- a.Run(ctx) }()
		Eventually(kernel.count).Should(Equal(2))
		cancel()
		Expect(<-done).To(Succeed())
		Expect(kernel.applied[0]).To(Equal(ruleset.Render(rs)), "the last good ruleset first")
		Expect(kernel.applied[1]).To(ContainSubstring("203.0.113.0/24 . tcp . 443"), "then the config's")
	})
})
