package metalscale_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

const project = "bench"

// The extension binary (built from this tree, with the chart's flags for
// the metal provider) against the in-process metal-api on one
// kube-apiserver: N firewall Extensions (BENCH_METAL_FIREWALLS, default
// 1,000) are created at once; agents are simulated by a heartbeat writer
// that reports for every provisioned Firewall every 10 s, as agents do,
// with the Firewall's spec applied. The row says how long until every
// Firewall is Ready and every Extension Succeeded, the extension process's
// peak resident memory (VmHWM), the metal-api's load in steady state
// (BENCH_METAL_STEADY, default 5 minutes), and how long another shoot's
// change takes to reach its FirewallDeployment while BENCH_METAL_BOOTING
// (default 100) more firewalls boot and are never heard of.
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
		opts.MachinesPerSize = n + booting() + 10
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
			append([]string{"--machine-provider=metal", "--metal-api-url=" + server.URL, "--metal-api-hmac-file=" + hmac, "--metal-api-hmac-auth-type=Metal-Edit", "--metal-api-allow-http"},
				strings.Fields(os.Getenv("BENCH_EXTENSION_ARGS"))...)...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { extension.Stop(os.Getenv("BENCH_KEEP_LOG")) })
		logFile := extension.LogFile

		By(fmt.Sprintf("creating %d shoot namespaces with a firewall Extension each", n))
		start := time.Now()
		for i := range n {
			ns := fmt.Sprintf("shoot--bench--s%d", i)
			Expect(framework.ShootNamespace{Name: ns, Shoot: cp}.Create(ctx, c)).To(Succeed())
			_, err := framework.Reconcile(ctx, c, ns, "firewall", shootConfig(""))
			Expect(err).NotTo(HaveOccurred())
		}
		created := time.Since(start)

		agents, stopAgents := context.WithCancel(context.Background())
		DeferCleanup(stopAgents)
		go heartbeats(agents, cp.Config, "shoot--bench--s")

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
		Eventually(func(g Gomega) {
			g.Expect(succeeded(ctx, c, "shoot--bench--s")).To(Equal(n))
		}).WithTimeout(10*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "see the extension's log %s", logFile)
		allSucceeded := time.Since(start)
		Expect(server.Allocations()).To(Equal(n), "one allocation per firewall")

		steady := steadyWindow()
		By(fmt.Sprintf("%s of steady state: heartbeats, status syncs, health checks", steady))
		before, steadyStart := server.Requests(), time.Now()
		time.Sleep(steady)
		requests := server.Requests() - before
		rate := float64(requests) / time.Since(steadyStart).Seconds()
		perFirewall := float64(requests) / float64(n) * (5 * time.Minute).Seconds() / time.Since(steadyStart).Seconds()

		b := booting()
		By(fmt.Sprintf("%d more firewalls boot and are never heard of; another shoot's change meanwhile", b))
		for i := range b {
			ns := fmt.Sprintf("shoot--bench--booting%d", i)
			Expect(framework.ShootNamespace{Name: ns, Shoot: cp}.Create(ctx, c)).To(Succeed())
			_, err := framework.Reconcile(ctx, c, ns, "firewall", shootConfig(""))
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(func(g Gomega) {
			g.Expect(waiting(ctx, c, "shoot--bench--booting")).To(Equal(b))
		}).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(Succeed(), "see the extension's log %s", logFile)
		changed := &extensionsv1alpha1.Extension{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: "shoot--bench--s0", Name: "firewall"}, changed)).To(Succeed())
		changeStart := time.Now()
		Expect(framework.UpdateProviderConfig(ctx, c, changed, shootConfig(`,"10.251.0.0/24"`))).To(Succeed())
		Eventually(func(g Gomega) {
			d := &firewallv1alpha1.FirewallDeployment{}
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "shoot--bench--s0", Name: constants.FirewallDeploymentName}, d)).To(Succeed())
			g.Expect(d.Spec.Template.Spec.InternalPrefixes).To(ContainElement("10.251.0.0/24"))
		}).WithTimeout(5*time.Minute).WithPolling(100*time.Millisecond).Should(Succeed(), "see the extension's log %s", logFile)
		changeTook := time.Since(changeStart)
		Expect(waiting(ctx, c, "shoot--bench--booting")).To(Equal(b), "the booting firewalls are still waited for")
		hwm := extension.StatusKiB("VmHWM") // the kernel's peak resident set of the process

		fmt.Println()
		fmt.Println("| firewall Extensions | create objects | all Firewalls Ready | all Extensions Succeeded | extension peak RSS (VmHWM) | metal-api requests in steady state | allocations | another shoot's change reaches its FirewallDeployment, with firewalls booting |")
		fmt.Println("|---|---|---|---|---|---|---|---|")
		fmt.Printf("| %d | %s | %s | %s | %.0f MiB | %.2f/s over %s: %.2f per firewall per 5 min | %d | %s with %d booting |\n", n, created.Round(100*time.Millisecond),
			allReady.Round(100*time.Millisecond), allSucceeded.Round(100*time.Millisecond), float64(hwm)/1024, rate, steady, perFirewall,
			server.Allocations(), changeTook.Round(10*time.Millisecond), b)
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

// shootConfig is a shoot's providerConfig, with more internal prefixes.
func shootConfig(morePrefixes string) []byte {
	return fmt.Appendf(nil,
		`{"size":%q,"image":%q,"partition":"partition-a","project":%q,"networks":[%q,%q],"internalPrefixes":["10.250.0.0/24"%s]}`,
		metalapi.Size, metalapi.Image, project, metalapi.PrivateNetwork(project), metalapi.Internet, morePrefixes)
}

// steadyWindow is BENCH_METAL_STEADY, 5 minutes by default: a provisioned
// machine is read again once per resync (5 minutes).
func steadyWindow() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("BENCH_METAL_STEADY")); err == nil && d > 0 {
		return d
	}
	return 5 * time.Minute
}

// booting is BENCH_METAL_BOOTING, 100 by default.
func booting() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_METAL_BOOTING")); err == nil && n > 0 {
		return n
	}
	return 100
}

// lastOperations counts the Extensions in namespaces with the prefix whose
// last operation is in the state, with a description beginning with prefix
// description ("": any).
func lastOperations(ctx context.Context, c client.Client, prefix string, state gardencorev1beta1.LastOperationState, description string) int {
	list := &extensionsv1alpha1.ExtensionList{}
	Expect(c.List(ctx, list)).To(Succeed())
	var n int
	for _, ex := range list.Items {
		op := ex.Status.LastOperation
		if strings.HasPrefix(ex.Namespace, prefix) && op != nil && op.State == state && strings.HasPrefix(op.Description, description) {
			n++
		}
	}
	return n
}

// succeeded counts the Extensions whose last operation succeeded.
func succeeded(ctx context.Context, c client.Client, prefix string) int {
	return lastOperations(ctx, c, prefix, gardencorev1beta1.LastOperationStateSucceeded, "")
}

// waiting counts the Extensions whose reconcile waits for the firewall.
func waiting(ctx context.Context, c client.Client, prefix string) int {
	return lastOperations(ctx, c, prefix, gardencorev1beta1.LastOperationStateProcessing, "Waiting for the firewall to forward")
}

// heartbeats reports, as every firewall's agent would, a run against seed
// and shoot with the Firewall's spec applied, for every provisioned
// Firewall in namespaces with the prefix, at most every 10 s each.
func heartbeats(ctx context.Context, cfg *rest.Config, prefix string) {
	defer GinkgoRecover()
	c, err := client.New(rest.CopyConfig(cfg), client.Options{Scheme: framework.SeedScheme})
	Expect(err).NotTo(HaveOccurred())
	for ctx.Err() == nil {
		list := &firewallv1alpha1.FirewallList{}
		if err := c.List(ctx, list); err == nil {
			for i := range list.Items {
				fw := &list.Items[i]
				if !strings.HasPrefix(fw.Namespace, prefix) || !meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionProvisioned) {
					continue
				}
				if a := fw.Status.AgentStatus; a != nil && a.LastRunAgainstSeed != nil && time.Since(a.LastRunAgainstSeed.Time) < 10*time.Second && a.AppliedGeneration == fw.Generation {
					continue
				}
				patch := client.MergeFrom(fw.DeepCopy())
				now := metav1.Now()
				fw.Status.AgentStatus = &firewallv1alpha1.AgentStatus{Version: "bench", LastRunAgainstSeed: &now, LastRunAgainstShoot: &now, AppliedGeneration: fw.Generation}
				_ = c.Status().Patch(ctx, fw, patch)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}
