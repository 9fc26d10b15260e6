package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics/metricstest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
)

// fakeApplier records what it is asked to apply.
type fakeApplier struct {
	mu       sync.Mutex
	applied  []string
	forgets  int
	failNext bool
}

func (f *fakeApplier) Apply(rs *ruleset.Ruleset) (nftables.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failNext {
		f.failNext = false
		return nftables.Result{}, errors.New("kernel says no")
	}
	f.applied = append(f.applied, ruleset.Render(rs))
	return nftables.Result{Mode: nftables.Full}, nil
}

func (f *fakeApplier) Forget() { f.mu.Lock(); f.forgets++; f.mu.Unlock() }

func (f *fakeApplier) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.applied) == 0 {
		return ""
	}
	return f.applied[len(f.applied)-1]
}

// tableCheckingApplier also answers whether the agent's table exists.
type tableCheckingApplier struct {
	*fakeApplier
	exists bool
}

func (t *tableCheckingApplier) TableExists(string) (bool, error) { return t.exists, nil }

// closedTableApplier also answers whether the boot step's closed chain exists.
type closedTableApplier struct {
	*tableCheckingApplier
	closed bool
}

func (c *closedTableApplier) ChainExists(table, chain string) (bool, error) {
	return c.closed && table == ruleset.TableName && chain == ruleset.ClosedChain, nil
}

func (f *fakeApplier) count() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.applied) }

// scrape reads the metrics as /metrics serves them.
func scrape(m *metrics.Metrics) map[string]float64 {
	GinkgoHelper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	got, err := metricstest.Parse(rec.Body.String())
	Expect(err).NotTo(HaveOccurred())
	return got
}

const cfg = `
sources:
  static:
    firewall: {internalPrefixes: ["10.0.1.0/24"]}
    cwnp: {egress: [{to: [{cidr: 203.0.113.0/24}], ports: [{port: 443}]}]}
controllers:
  firewall: {source: static}
  cwnp: {source: static}
`

var _ = Describe("Agent", func() {
	var (
		path string
		fake *fakeApplier
		logs *gbytes.Buffer
		a    *agent.Agent
	)
	write := func(content string) {
		Expect(atomicfile.Write(path, []byte(content), 0o600)).To(Succeed())
	}
	BeforeEach(func() {
		path = filepath.Join(GinkgoT().TempDir(), "config.yaml")
		write(cfg)
		fake = &fakeApplier{}
		logs = gbytes.NewBuffer()
		a = &agent.Agent{ConfigPath: path, Applier: fake, Log: slog.New(slog.NewTextHandler(logs, nil)),
			PollInterval: 10 * time.Millisecond, ResyncInterval: time.Hour}
	})

	It("applies once", func() {
		_, err := a.ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		Expect(fake.last()).To(ContainSubstring("203.0.113.0/24 . tcp . 443"))
	})

	It("records its applies in its metrics", func() {
		a.Metrics = metrics.New("v-test", nil, nil)
		_, err := a.ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		fake.mu.Lock()
		fake.failNext = true
		fake.mu.Unlock()
		_, err = a.ApplyOnce()
		Expect(err).To(HaveOccurred())
		m := scrape(a.Metrics)
		Expect(m).To(HaveKeyWithValue(`firewall_agent_applies_total{result="changed"}`, 1.0))
		Expect(m).To(HaveKeyWithValue(`firewall_agent_applies_total{result="error"}`, 1.0))
		Expect(m).To(HaveKeyWithValue(`firewall_agent_apply_duration_seconds_count`, 2.0))
		Expect(m).To(HaveKeyWithValue(`firewall_agent_ruleset_set_elements{set="internal_v4"}`, 1.0))
	})

	It("refuses to start on a bad config, applying nothing", func() {
		write(strings.Replace(cfg, "443", "0", 1))
		Expect(a.Run(context.Background())).To(MatchError(ContainSubstring("ports[0].port: Invalid value: 0")))
		Expect(fake.count()).To(BeZero())
	})

	It("re-applies on change, keeps the ruleset on a bad config, and resyncs", func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- a.Run(ctx) }()
		DeferCleanup(func() { cancel(); Eventually(done).Should(Receive(BeNil())) })
		Eventually(fake.count).Should(Equal(1))

		write(strings.Replace(cfg, "443", "8443", 1))
		Eventually(fake.last).Should(ContainSubstring(". tcp . 8443"))

		n := fake.count()
		write(strings.Replace(cfg, "203.0.113.0/24", "nope", 1))
		Eventually(logs).Should(gbytes.Say(`config changed but is invalid; keeping the ruleset in force.*invalid CIDR`))
		Consistently(fake.count, 100*time.Millisecond).Should(Equal(n))

		By("a config file that disappears is logged and changes nothing")
		Expect(os.Remove(path)).To(Succeed())
		Eventually(logs).Should(gbytes.Say(`reading config; keeping the ruleset in force`))
		Consistently(fake.count, 100*time.Millisecond).Should(Equal(n))

		By("a refused apply is logged and retried on the next change")
		fake.mu.Lock()
		fake.failNext = true
		fake.mu.Unlock()
		write(strings.Replace(cfg, "443", "9443", 1))
		Eventually(logs).Should(gbytes.Say(`apply failed; the previous ruleset stays in force.*kernel says no`))
		write(strings.Replace(cfg, "443", "9444", 1))
		Eventually(fake.last).Should(ContainSubstring(". tcp . 9444"))
	})

	It("keeps the ruleset when a generated config is cut short: its digest no longer matches", func() {
		seal := func(content string) string {
			sum := sha256.Sum256([]byte(content))
			return agentconfigv1alpha1.DigestPrefix + hex.EncodeToString(sum[:]) + "\n" + content
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- a.Run(ctx) }()
		DeferCleanup(func() { cancel(); Eventually(done).Should(Receive(BeNil())) })
		Eventually(fake.count).Should(Equal(1))

		write(seal(strings.Replace(cfg, "443", "8443", 1)))
		Eventually(fake.last).Should(ContainSubstring(". tcp . 8443"))
		n := fake.count()

		full := seal(strings.Replace(cfg, "443", "9443", 1))
		write(full[:strings.LastIndex(strings.TrimSuffix(full, "\n"), "\n")+1])
		Eventually(logs).Should(gbytes.Say(`config changed but is invalid; keeping the ruleset in force.*does not match its content`))
		Consistently(fake.count, 100*time.Millisecond).Should(Equal(n))
	})

	It("resyncs periodically from the kernel's state", func() {
		a.ResyncInterval = 50 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- a.Run(ctx) }()
		DeferCleanup(func() { cancel(); Eventually(done).Should(Receive(BeNil())) })
		Eventually(fake.count).Should(BeNumerically(">=", 3))
		fake.mu.Lock()
		Expect(fake.forgets).To(BeNumerically(">=", 2))
		fake.mu.Unlock()
	})

	DescribeTable("with the shoot unreachable at start",
		func(tableExists, closed bool, wantApplied bool) {
			kubeconfig := filepath.Join(GinkgoT().TempDir(), "shoot.kubeconfig")
			// Nothing listens on port 1: every request to the shoot fails.
			Expect(os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: s, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: s, context: {cluster: s, user: u}}]
current-context: s
`), 0o600)).To(Succeed())
			write(strings.NewReplacer("  cwnp: {source: static}", "  cwnp: {source: shoot}",
				"sources:\n", "sources:\n  shoot: {namespace: firewall, kubeconfig: "+kubeconfig+"}\n").Replace(cfg))
			checker := &closedTableApplier{tableCheckingApplier: &tableCheckingApplier{fakeApplier: fake, exists: tableExists}, closed: closed}
			a.Applier, a.SeedInterval = checker, 20*time.Millisecond
			a.Metrics = metrics.New("v-test", nil, nil)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- a.Run(ctx) }()
			DeferCleanup(func() { cancel(); Eventually(done).Should(Receive(BeNil())) })
			Eventually(logs).Should(gbytes.Say(`reading the policies from the shoot; the ruleset in force stays`))
			Eventually(func() map[string]float64 { return scrape(a.Metrics) }).Should(And(
				HaveKeyWithValue(`firewall_agent_source_up{source="shoot"}`, 0.0),
				HaveKeyWithValue(`firewall_agent_source_up{source="static"}`, 1.0),
				Not(HaveKey(`firewall_agent_source_up{source="seed"}`))))
			if wantApplied {
				Eventually(fake.last).Should(And(ContainSubstring("10.0.1.0/24"), Not(ContainSubstring("203.0.113.0/24"))),
					"the internal prefixes, closed, without the static policy")
			} else {
				Consistently(fake.count, 200*time.Millisecond).Should(BeZero(), "an earlier run's rules stay until the shoot answers")
			}
		},
		Entry("keeps an earlier run's table untouched", true, false, false),
		Entry("closes a fresh machine without the shoot's policies", false, false, true),
		Entry("treats the boot step's closed table as a fresh machine: it keeps nothing", true, true, true),
	)

	It("does not crash when a changed config reads the shoot it was not started with, and keeps the ruleset", func() {
		// The agent writes its kubeconfigs into its folder, the config's.
		dir := filepath.Dir(path)
		// The seed cannot be reached (no kubeconfig files): the agent keeps trying.
		seedOnly := "name: fw-0\nsources:\n  seed: {bootstrapKubeconfig: " + dir + "/bootstrap, kubeconfig: " + dir + "/seed, namespace: shoot--p--s}\ncontrollers:\n  firewall: {source: seed}\n"
		write(seedOnly)
		a.SeedInterval = 20 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- a.Run(ctx) }()
		DeferCleanup(func() { cancel(); Eventually(done).Should(Receive(BeNil())) })
		Eventually(logs).Should(gbytes.Say(`reading the Firewall from the seed`))

		write(strings.Replace(seedOnly, "controllers:", "  shoot: {namespace: firewall, kubeconfig: "+dir+"/shoot}\ncontrollers:\n  cwnp: {source: shoot}", 1))
		Eventually(logs).Should(gbytes.Say(`not reading the shoot; the ruleset in force stays.*restart the agent`))
		Consistently(fake.count, 100*time.Millisecond).Should(BeZero())
	})
})
