package agentseed_test

import (
	"fmt"
	"log/slog"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

var _ = Describe("the seed's kube-apiserver hangs", func() {
	It("keeps the rules, reports the seed down once a read times out, and is back within seconds of it answering again", func(ctx SpecContext) {
		seed := startSeed("seed-hang")
		files := seedAgent(ctx, seed, "fw-0", "10.21.0.0/24", "")
		log := slog.New(slog.NewTextHandler(GinkgoWriter, nil))
		applier := &recorder{}
		m := metrics.New("v-test", nil, log)
		a := &agent.Agent{ConfigPath: files.config, Applier: applier, Log: log, Metrics: m,
			PollInterval: 200 * time.Millisecond, SeedInterval: 500 * time.Millisecond, Version: "v-test"}
		stopAgent := framework.RunInBackground(a.Run)
		DeferCleanup(func() { Expect(stopAgent()).To(Succeed()) })
		seedUp := sourceUp(m, "seed")
		Eventually(applier.Last).WithTimeout(time.Minute).Should(ContainSubstring("10.21.0.0/24"))
		Eventually(heartbeat(ctx, seed)).Should(Equal("v-test"))
		Expect(seedUp()).To(Equal(1.0))
		rules := applier.Last()

		By("stopping it (SIGSTOP): the kernel accepts connections and requests, nothing answers")
		thaw, err := seed.cp.FreezeAPIServer()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(thaw()).To(Succeed()) })
		frozen := time.Now()
		// Without a request timeout, only HTTP/2's ping (30 s idle + 15 s)
		// would end the hanging read: the bound is the agent's.
		bound := 2 * agentconfigv1alpha1.APIRequestTimeout
		Eventually(seedUp).WithTimeout(bound).WithPolling(100*time.Millisecond).Should(Equal(0.0), "a read that hangs ends at the request timeout")
		down := time.Since(frozen)
		Consistently(applier.Last).WithTimeout(2*time.Second).Should(Equal(rules), "the rules in force stay")

		By("continuing it")
		Expect(thaw()).To(Succeed())
		thawed := time.Now()
		Eventually(seedUp).WithTimeout(bound).WithPolling(100 * time.Millisecond).Should(Equal(1.0))
		back := time.Since(thawed)
		Eventually(heartbeat(ctx, seed)).WithTimeout(bound).Should(Equal("v-test"))
		Expect(applier.Last()).To(Equal(rules))

		By("stopped again, the agent stops at once when told, with a read hanging")
		thaw2, err := seed.cp.FreezeAPIServer()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(thaw2()).To(Succeed()) })
		Eventually(seedUp).WithTimeout(bound).WithPolling(100 * time.Millisecond).Should(Equal(0.0))
		stopping := time.Now()
		stopped := make(chan error, 1)
		go func() { stopped <- stopAgent() }()
		Eventually(stopped).WithTimeout(5*time.Second).Should(Receive(BeNil()), "cancelling the round's context ends the hanging read")
		stopTook := time.Since(stopping)

		report := fmt.Sprintf("seed hung (SIGSTOP): reported down %v after, back %v after it answered again (request timeout %v, seed interval 500ms); stopped in %v with a read hanging",
			down.Round(100*time.Millisecond), back.Round(100*time.Millisecond), agentconfigv1alpha1.APIRequestTimeout, stopTook.Round(time.Millisecond))
		fmt.Fprintln(GinkgoWriter, report)
		AddReportEntry("seed hang", report)
	})
})

var _ = Describe("the shoot's kube-apiserver hangs", func() {
	It("keeps the rules, reports the shoot down once a read times out, and reads it again within seconds of it answering", func(ctx SpecContext) {
		shoot, configPath := shootAgent("shoot-hang", "10.31.0.0/24")
		log := slog.New(slog.NewTextHandler(GinkgoWriter, nil))
		applier := &recorder{}
		m := metrics.New("v-test", nil, log)
		a := &agent.Agent{ConfigPath: configPath, Applier: applier, Log: log, Metrics: m,
			PollInterval: 200 * time.Millisecond, SeedInterval: 500 * time.Millisecond, Version: "v-test"}
		stopAgent := framework.RunInBackground(a.Run)
		DeferCleanup(func() { Expect(stopAgent()).To(Succeed()) })
		shootUp := sourceUp(m, "shoot")
		Eventually(applier.Last).WithTimeout(time.Minute).Should(ContainSubstring("10.31.0.0/24"))
		Eventually(shootUp).WithTimeout(30 * time.Second).Should(Equal(1.0))
		rules := applier.Last()

		By("stopping it (SIGSTOP)")
		thaw, err := shoot.FreezeAPIServer()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(thaw()).To(Succeed()) })
		frozen := time.Now()
		bound := 2 * agentconfigv1alpha1.APIRequestTimeout
		Eventually(shootUp).WithTimeout(bound).WithPolling(100*time.Millisecond).Should(Equal(0.0), "a read that hangs ends at the request timeout")
		down := time.Since(frozen)
		Consistently(applier.Last).WithTimeout(2*time.Second).Should(Equal(rules), "the rules in force stay")

		By("continuing it")
		Expect(thaw()).To(Succeed())
		thawed := time.Now()
		Eventually(shootUp).WithTimeout(bound).WithPolling(100 * time.Millisecond).Should(Equal(1.0))
		report := fmt.Sprintf("shoot hung (SIGSTOP): reported down %v after, read again %v after it answered again (request timeout %v)",
			down.Round(100*time.Millisecond), time.Since(thawed).Round(100*time.Millisecond), agentconfigv1alpha1.APIRequestTimeout)
		fmt.Fprintln(GinkgoWriter, report)
		AddReportEntry("shoot hang", report)
		Expect(applier.Last()).To(Equal(rules))
	})
})
