package agentseed_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics/metricstest"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// outage is how long the seed's kube-apiserver stays down: FAULT_OUTAGE
// (e.g. 10m) or a minute.
func outage() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("FAULT_OUTAGE")); err == nil && d > 0 {
		return d
	}
	return time.Minute
}

// sourceUp reads the agent's firewall_agent_source_up of source from its
// metrics handler, as Prometheus would scrape it.
func sourceUp(m *metrics.Metrics, source string) func() float64 {
	return func() float64 {
		GinkgoHelper()
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		got, err := metricstest.Parse(rec.Body.String())
		Expect(err).NotTo(HaveOccurred())
		return got[fmt.Sprintf("firewall_agent_source_up{source=%q}", source)]
	}
}

var _ = Describe("the seed's kube-apiserver stopped", func() {
	It("keeps the rules, reports the seed down, retries at its interval without leaking, and is back within seconds with its own identity", func(ctx SpecContext) {
		seed := startSeed("seed-outage")
		files := seedAgent(ctx, seed, "fw-0", "10.20.0.0/24", "")
		seedPath, configPath := files.seed, files.config

		logs := gbytes.NewBuffer()
		log := slog.New(slog.NewTextHandler(io.MultiWriter(GinkgoWriter, logs), nil))
		const interval = 500 * time.Millisecond
		start := func(applier *recorder, m *metrics.Metrics) func() {
			a := &agent.Agent{ConfigPath: configPath, Applier: applier, Log: log, Metrics: m,
				PollInterval: 200 * time.Millisecond, SeedInterval: interval, Version: "v-test"}
			stopAgent := framework.RunInBackground(a.Run)
			stop := func() { Expect(stopAgent()).To(Succeed()) }
			DeferCleanup(stop)
			return stop
		}
		applier := &recorder{}
		m := metrics.New("v-test", nil, log)
		stopAgent := start(applier, m)
		seedUp := sourceUp(m, "seed")

		Eventually(applier.Last).WithTimeout(time.Minute).Should(ContainSubstring("10.20.0.0/24"))
		Eventually(heartbeat(ctx, seed)).Should(Equal("v-test"))
		Expect(seedUp()).To(Equal(1.0))
		// Without the boot credential, only the agent's own certificate gets it in again.
		Expect(credentials.DeleteBootCredentials(ctx, seed.client, bootNamespace, namespace, "fw-0")).To(Succeed())
		serial := certificateSerial(seedPath)
		rulesBefore, appliesBefore := applier.Last(), applier.count()
		// The seed's manager, its informers and the agent settle first.
		time.Sleep(2 * time.Second)
		runtime.GC()
		goroutinesBefore := runtime.NumGoroutine()
		var mem runtime.MemStats
		runtime.ReadMemStats(&mem)
		heapBefore := mem.HeapInuse

		d := outage()
		By(fmt.Sprintf("killing the seed's kube-apiserver (SIGKILL) for %v", d))
		// The first bootstrap is logged above this mark; none may follow it.
		mark, marked := len(logs.Contents()), time.Now()
		since := func() string { return string(logs.Contents()[mark:]) }
		Expect(seed.cp.KillAPIServer()).To(Succeed())
		stopped := time.Now()
		Eventually(seedUp).WithTimeout(10 * time.Second).Should(Equal(0.0))
		maxGoroutines := 0
		for time.Since(stopped) < d {
			Expect(applier.Last()).To(Equal(rulesBefore), "the rules in force stay: a resync re-applies them as they are")
			maxGoroutines = max(maxGoroutines, runtime.NumGoroutine())
			time.Sleep(time.Second)
		}
		failures := strings.Count(since(), "reading the Firewall from the seed; the ruleset in force stays")
		Expect(failures).To(BeNumerically(">=", 2))
		Expect(failures).To(BeNumerically("<=", int(time.Since(marked)/interval)+2), "one try per seed interval, no tight loop")
		Expect(applier.count()).To(BeNumerically("<=", appliesBefore+int(d/time.Minute)+1), "at most the resyncs (every minute), which re-apply the same rules")

		By("starting it again on the same address and etcd")
		Expect(seed.cp.StartAPIServer()).To(Succeed())
		restarted := time.Now()
		Eventually(seedUp).WithTimeout(10 * time.Second).Should(Equal(1.0))
		Eventually(heartbeat(ctx, seed)).WithTimeout(10 * time.Second).Should(Equal("v-test"))
		back := time.Since(restarted)
		Expect(certificateSerial(seedPath)).To(Equal(serial), "the same certificate: no bootstrap")
		Expect(since()).NotTo(ContainSubstring("bootstrapping"))

		By("not leaking: the goroutines come back to where they were")
		Eventually(func() int { runtime.GC(); return runtime.NumGoroutine() }).WithTimeout(30 * time.Second).
			Should(BeNumerically("<=", goroutinesBefore+5))
		runtime.GC()
		runtime.ReadMemStats(&mem)
		report := fmt.Sprintf("outage %v: %d failed reads, back %v after the restart; goroutines %d before, at most %d during, %d after; heap in use %.1f MiB before, %.1f MiB after",
			d, failures, back.Round(time.Millisecond), goroutinesBefore, maxGoroutines, runtime.NumGoroutine(),
			float64(heapBefore)/(1<<20), float64(mem.HeapInuse)/(1<<20))
		fmt.Fprintln(GinkgoWriter, report)
		AddReportEntry("seed outage", report)

		By("a restarted agent (as after a reboot) reads the seed with the identity it keeps on disk")
		stopAgent()
		again := &recorder{}
		start(again, nil)
		Eventually(again.Last).WithTimeout(30 * time.Second).Should(ContainSubstring("10.20.0.0/24"))
		Expect(certificateSerial(seedPath)).To(Equal(serial))
		Expect(since()).NotTo(ContainSubstring("bootstrapping"))
	})
})

var _ = Describe("the shoot's kube-apiserver stopped", func() {
	It("keeps the rules, reports the shoot down, retries at its interval, and reads the shoot again once it is back", func(ctx SpecContext) {
		shoot, configPath := shootAgent("shoot-outage", "10.30.0.0/24")

		logs := gbytes.NewBuffer()
		log := slog.New(slog.NewTextHandler(io.MultiWriter(GinkgoWriter, logs), nil))
		const interval = 500 * time.Millisecond
		applier := &recorder{}
		m := metrics.New("v-test", nil, log)
		a := &agent.Agent{ConfigPath: configPath, Applier: applier, Log: log, Metrics: m,
			PollInterval: 200 * time.Millisecond, SeedInterval: interval, Version: "v-test"}
		stopAgent := framework.RunInBackground(a.Run)
		DeferCleanup(func() { Expect(stopAgent()).To(Succeed()) })
		shootUp := sourceUp(m, "shoot")
		Eventually(applier.Last).WithTimeout(time.Minute).Should(ContainSubstring("10.30.0.0/24"))
		Eventually(shootUp).WithTimeout(30 * time.Second).Should(Equal(1.0))
		rulesBefore, appliesBefore := applier.Last(), applier.count()

		d := outage()
		By(fmt.Sprintf("killing the shoot's kube-apiserver (SIGKILL) for %v", d))
		Expect(shoot.KillAPIServer()).To(Succeed())
		stopped := time.Now()
		Eventually(shootUp).WithTimeout(10 * time.Second).Should(Equal(0.0))
		for time.Since(stopped) < d {
			Expect(applier.Last()).To(Equal(rulesBefore), "the rules in force stay")
			time.Sleep(time.Second)
		}
		Expect(applier.count()).To(BeNumerically("<=", appliesBefore+int(d/time.Minute)+1), "at most the resyncs, which re-apply the same rules")

		By("starting it again on the same address and etcd")
		Expect(shoot.StartAPIServer()).To(Succeed())
		restarted := time.Now()
		Eventually(shootUp).WithTimeout(10 * time.Second).Should(Equal(1.0))
		fmt.Fprintf(GinkgoWriter, "shoot outage %v: read again %v after the restart\n", d, time.Since(restarted).Round(time.Millisecond))
		Expect(applier.Last()).To(Equal(rulesBefore))
	})
})

// shootAgent starts a shoot and writes the config of an agent that reads
// its policies there and its Firewall spec (internal prefix) from the file.
func shootAgent(name, prefix string) (*testenv.ControlPlane, string) {
	GinkgoHelper()
	shoot, err := testenv.Start(testenv.Options{Name: name, CRDDirectoryPaths: testenv.ShootCRDPaths()})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(shoot.Stop()).To(Succeed()) })
	admin, err := testenv.Kubeconfig(shoot.Config)
	Expect(err).NotTo(HaveOccurred())
	dir := GinkgoT().TempDir()
	shootPath := filepath.Join(dir, "shoot.kubeconfig")
	configPath := filepath.Join(dir, "config.yaml")
	Expect(os.WriteFile(shootPath, admin, 0o600)).To(Succeed())
	Expect(os.WriteFile(configPath, []byte(fmt.Sprintf(`name: fw-0
sources:
  shoot: {namespace: firewall, kubeconfig: %s}
  static:
    firewall: {internalPrefixes: [%q]}
controllers:
  firewall: {source: static}
  cwnp:     {source: shoot}
`, shootPath, prefix)), 0o600)).To(Succeed())
	return shoot, configPath
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
