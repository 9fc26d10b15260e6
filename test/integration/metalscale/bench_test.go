package metalscale_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

const project = "bench"

// The extension binary (built from this tree, with the chart's flags for
// the metal provider) against the in-process metal-api on one
// kube-apiserver: N firewall Extensions (BENCH_METAL_FIREWALLS, default
// 1,000) are created at once; agents are simulated by a heartbeat writer
// that reports for every provisioned Firewall every 10 s, as agents do.
// The row says how long until every Firewall is Ready and the extension
// process's peak resident memory (VmHWM).
var _ = Describe("firewall Extensions on metal at scale", Label("bench"), func() {
	It("prints the time to all Ready and the extension's peak memory", func(ctx SpecContext) {
		if os.Getenv("BENCH_TABLE") != "true" {
			Skip("set BENCH_TABLE=true (make bench)")
		}
		n := firewalls()
		dir := GinkgoT().TempDir()

		cp, err := testenv.Start(testenv.Options{Name: "metal-bench", CRDDirectoryPaths: testenv.SeedCRDPaths()})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(cp.Stop()).To(Succeed()) })
		c, err := framework.SeedClient(cp)
		Expect(err).NotTo(HaveOccurred())

		opts := metalapi.Inventory(project)
		opts.MachinesPerSize = n + 10
		for i := range opts.Networks {
			if opts.Networks[i].ID == metalapi.Underlay {
				opts.Networks[i].Prefix = "10.255.0.0/16" // every firewall gets an underlay address
			}
		}
		server, err := metalapi.New(opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(server.Close)

		By("starting the extension binary with the metal provider")
		binary, err := framework.BuildExtension(dir)
		Expect(err).NotTo(HaveOccurred())
		hmac := filepath.Join(dir, "hmac")
		Expect(os.WriteFile(hmac, []byte(metalapi.EditKey), 0o600)).To(Succeed())
		extension, err := framework.StartExtensionProcess(ctx, binary, dir, cp,
			"--machine-provider=metal", "--metal-api-url="+server.URL, "--metal-api-hmac-file="+hmac, "--metal-api-hmac-auth-type=Metal-Edit", "--metal-api-allow-http")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { extension.Stop(os.Getenv("BENCH_KEEP_LOG")) })
		logFile := extension.LogFile

		By(fmt.Sprintf("creating %d shoot namespaces with a firewall Extension each", n))
		start := time.Now()
		for i := range n {
			ns := fmt.Sprintf("shoot--bench--s%d", i)
			Expect(framework.ShootNamespace{Name: ns, Shoot: cp}.Create(ctx, c)).To(Succeed())
			_, err := framework.Reconcile(ctx, c, ns, "firewall", fmt.Appendf(nil,
				`{"size":%q,"image":%q,"partition":"partition-a","project":%q,"networks":[%q,%q],"internalPrefixes":["10.250.0.0/24"]}`,
				metalapi.Size, metalapi.Image, project, metalapi.PrivateNetwork(project), metalapi.Internet))
			Expect(err).NotTo(HaveOccurred())
		}
		created := time.Since(start)

		agents, stopAgents := context.WithCancel(context.Background())
		DeferCleanup(stopAgents)
		go heartbeats(agents, cp.Config)

		var ready int
		Eventually(func(g Gomega) {
			list := &firewallv1alpha1.FirewallList{}
			g.Expect(c.List(ctx, list)).To(Succeed())
			ready = 0
			for _, fw := range list.Items {
				if meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionReady) {
					ready++
				}
			}
			g.Expect(ready).To(Equal(n))
		}).WithTimeout(20*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "see the extension's log %s", logFile)
		allReady := time.Since(start)
		Expect(server.Allocations()).To(Equal(n), "one allocation per firewall")

		By("a minute of steady state: heartbeats, status syncs, health checks")
		before, steadyStart := server.Requests(), time.Now()
		time.Sleep(time.Minute)
		rate := float64(server.Requests()-before) / time.Since(steadyStart).Seconds()
		hwm := extension.StatusKiB("VmHWM") // the kernel's peak resident set of the process

		fmt.Println()
		fmt.Println("| firewall Extensions | create objects | all Firewalls Ready | extension peak RSS (VmHWM) | metal-api requests/s in steady state | allocations |")
		fmt.Println("|---|---|---|---|---|---|")
		fmt.Printf("| %d | %s | %s | %.0f MiB | %.1f | %d |\n", n, created.Round(100*time.Millisecond), allReady.Round(100*time.Millisecond),
			float64(hwm)/1024, rate, server.Allocations())
		server.ExpectNoViolations()
	})
})

// firewalls is BENCH_METAL_FIREWALLS, 1,000 by default.
func firewalls() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_METAL_FIREWALLS")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// heartbeats reports, as every firewall's agent would, a run against seed
// and shoot for every provisioned Firewall, at most every 10 s each.
func heartbeats(ctx context.Context, cfg *rest.Config) {
	defer GinkgoRecover()
	c, err := client.New(rest.CopyConfig(cfg), client.Options{Scheme: framework.SeedScheme})
	Expect(err).NotTo(HaveOccurred())
	for ctx.Err() == nil {
		list := &firewallv1alpha1.FirewallList{}
		if err := c.List(ctx, list); err == nil {
			for i := range list.Items {
				fw := &list.Items[i]
				if !meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionProvisioned) {
					continue
				}
				if a := fw.Status.AgentStatus; a != nil && a.LastRunAgainstSeed != nil && time.Since(a.LastRunAgainstSeed.Time) < 10*time.Second {
					continue
				}
				patch := client.MergeFrom(fw.DeepCopy())
				now := metav1.Now()
				fw.Status.AgentStatus = &firewallv1alpha1.AgentStatus{Version: "bench", LastRunAgainstSeed: &now, LastRunAgainstShoot: &now}
				_ = c.Status().Patch(ctx, fw, patch)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}
