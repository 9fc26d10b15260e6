package acl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	matchingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/matching/v3"
	compositev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/composite/v3"
	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy/envoytest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	aclhealthcheck "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/healthcheck"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// The reconcile table runs with BENCH_TABLE=true (make bench), on a control plane and manager of
// its own with the binary's settings: Gardener's Extension reconciler with 5 workers, the health
// check at its default period, no log output. It reconciles 1,000, then 5,000 ACL shoots
// (BENCH_ACL_SHOOTS) on one ingress gateway; each row is the growth to that number of shoots,
// then one shoot's change.
var _ = Describe("reconciling many ACL shoots", Label("bench"), Ordered, func() {
	const benchIngress = "istio-ingress--bench"
	benchLabels := map[string]string{"app": "istio-ingressgateway", "istio": "ingressgateway--bench"}
	var c client.Client
	var cfg *rest.Config

	BeforeAll(func() {
		if os.Getenv("BENCH_TABLE") != "true" {
			Skip("set BENCH_TABLE=true (make bench)")
		}
		cp, err := testenv.Start(testenv.Options{Name: "acl-bench", CRDDirectoryPaths: testenv.SeedCRDPaths()})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(cp.Stop()).To(Succeed()) })
		c, err = client.New(cp.Config, client.Options{Scheme: kubernetes.SeedScheme})
		Expect(err).NotTo(HaveOccurred())
		cfg = cp.Config
		// Gardener's health check logs through the global logger; into GinkgoWriter, which keeps
		// what a spec wrote, thousands of shoots' lines would be counted as the manager's heap.
		logf.SetLogger(logr.Discard())
		DeferCleanup(func() { logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true))) })

		// The binary's client-side limits, not envtest's 1,000 requests per second.
		mgrCfg := rest.CopyConfig(cp.Config)
		mgrCfg.QPS, mgrCfg.Burst = constants.KubeAPIQPS, constants.KubeAPIBurst
		mgr, err := ctrl.NewManager(mgrCfg, ctrl.Options{
			Scheme:     kubernetes.SeedScheme,
			Logger:     logr.Discard(),
			Metrics:    metricsserver.Options{BindAddress: "0"},
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		})
		Expect(err).NotTo(HaveOccurred())
		mgrCtx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		Expect(addController(mgrCtx, mgr)).To(Succeed())
		Expect(aclhealthcheck.AddToManager(mgr, 0)).To(Succeed())
		go func() {
			defer GinkgoRecover()
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()

		Expect(c.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchIngress, Labels: map[string]string{"gardener.cloud/role": "istio-ingress"}}})).To(Succeed())
		Expect(c.Create(ctx(), &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: benchIngress, Labels: benchLabels},
			Spec:       corev1.ServiceSpec{Selector: benchLabels, Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(9443)}}},
		})).To(Succeed())
	})

	It("prints time, memory, the shared objects' sizes and what one shoot's change rewrites as shoots grow", func() {
		shootNS := func(i int) string { return fmt.Sprintf("shoot--bench--s%d", i) }
		// Ten CIDRs in each shoot's rule, distinct across shoots; with the 7 always allowed (seed
		// nodes and pods, shoot nodes IPv4 and IPv6, egress, the operator's) each shoot brings 17.
		ruleOf := func(i, extra int) *k8sruntime.RawExtension {
			var cidrs []string
			for j := range 10 + extra {
				cidrs = append(cidrs, fmt.Sprintf("%d.%d.%d.0/24", 11+i/256, i%256, j))
			}
			return rule("ALLOW", cidrs...)
		}

		header := []string{
			"| ACL shoots (10 rule CIDRs each) | create objects | last write → all shoots in the shared config | shards | largest shared object | objects rewritten for one shoot's change (and its time) | RBAC evaluations per request | peak Go heap (manager + test) | live heap after GC |",
			"|---|---|---|---|---|---|---|---|---|",
		}
		fmt.Println() // Ginkgo's progress marks end without a newline.
		for _, r := range header {
			fmt.Println(r)
		}
		created := 0
		var requestRows []string
		for _, n := range benchSizes() {
			requestsBefore := apiserverRequests(cfg)
			var peak atomic.Uint64
			stop := make(chan struct{})
			go func() {
				var ms runtime.MemStats
				for {
					runtime.ReadMemStats(&ms)
					if ms.HeapInuse > peak.Load() {
						peak.Store(ms.HeapInuse)
					}
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
				}
			}()

			stopCPUProfile := cpuProfile(n)
			start := time.Now()
			// Eight writers, as gardenlets of a busy seed would be: one alone makes creation,
			// not the controller, the length of the run.
			next := make(chan int)
			var writers sync.WaitGroup
			for range 8 {
				writers.Add(1)
				go func() {
					defer GinkgoRecover()
					defer writers.Done()
					for i := range next {
						ns := shootNS(i)
						createShootWith(c, ns, []string{fmt.Sprintf("api.s%d.bench.example.com", i)}, benchLabels)
						Expect(c.Create(ctx(), &extensionsv1alpha1.Extension{
							ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: ns},
							Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: constants.ACLExtensionType, ProviderConfig: ruleOf(i, 0)}},
						})).To(Succeed())
					}
				}()
			}
			for ; created < n; created++ {
				next <- created
			}
			close(next)
			writers.Wait()
			lastWrite := time.Now()
			createTime := lastWrite.Sub(start)

			// Data Secrets are immutable and named by their content: each is decoded once, so the
			// polling costs the shards rewritten since, not the whole config each time.
			inSecret := map[string]map[string]bool{}
			Eventually(func(g Gomega) {
				found, err := shootsInSharedConfig(c, benchIngress, inSecret)
				g.Expect(err).NotTo(HaveOccurred())
				missing := 0
				for i := range n {
					if !found[shootNS(i)] {
						missing++
					}
				}
				g.Expect(missing).To(BeZero(), "shoots missing in the shared config")
			}).WithTimeout(60 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			inShared := time.Since(lastWrite)
			clear(inSecret)
			largest, evaluations, shards := sharedFigures(c, benchIngress, n, shootNS)

			By("changing one shoot's rule")
			before := sharedSecretRefs(c, benchIngress)
			changed := shootNS(n / 2)
			ex := &extensionsv1alpha1.Extension{}
			Expect(c.Get(ctx(), client.ObjectKey{Namespace: changed, Name: "acl"}, ex)).To(Succeed())
			ex.Spec.ProviderConfig = ruleOf(n/2, 1)
			changeStart := time.Now()
			Expect(c.Update(ctx(), ex)).To(Succeed())
			newCIDR := fmt.Sprintf(`"address_prefix":"%d.%d.10.0"`, 11+(n/2)/256, (n/2)%256)
			Eventually(func(g Gomega) {
				objs, err := framework.ACLSharedObjects(ctx(), c, benchIngress)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(toJSON(objs)).To(ContainSubstring(newCIDR))
			}).WithTimeout(10 * time.Minute).WithPolling(time.Second).Should(Succeed())
			changeTime := time.Since(changeStart)
			after := sharedSecretRefs(c, benchIngress)
			rewritten := 0
			for name, ref := range after {
				if before[name] != ref {
					rewritten++
				}
			}
			close(stop)
			stopCPUProfile()
			requestRows = append(requestRows, fmt.Sprintf("| %d | %s |", n, topRequests(requestsBefore, apiserverRequests(cfg), 12)))
			live := liveHeap(n)

			fmt.Printf("| %d | %s | %s | %d | %.1f KiB | %d (%s) | %d | %.0f MiB | %.0f MiB |\n",
				n, createTime.Round(10*time.Millisecond), inShared.Round(10*time.Millisecond), shards,
				float64(largest)/1024, rewritten, changeTime.Round(10*time.Millisecond), evaluations, float64(peak.Load())/(1<<20), float64(live)/(1<<20))
		}
		fmt.Println()
		fmt.Println("| ACL shoots | requests to the kube-apiserver during the row, most frequent first |")
		fmt.Println("|---|---|")
		for _, r := range requestRows {
			fmt.Println(r)
		}
	})
})

// benchShootInConfig finds the bench shoots' namespaces in the shared config (their destinations).
var benchShootInConfig = regexp.MustCompile(`\.(shoot--bench--s[0-9]+)\.svc`)

// sharedFigures decodes the namespace's shared config once and returns its largest object's
// size, the RBAC evaluations of the worst request and the number of shards. The decoded objects
// are dropped on return, before the live heap is read.
func sharedFigures(c client.Client, namespace string, n int, shootNS func(int) string) (int, int, int) {
	GinkgoHelper()
	shared, err := framework.ACLSharedObjects(ctx(), c, namespace)
	Expect(err).NotTo(HaveOccurred())
	largest := 0
	for _, o := range shared {
		raw, err := json.Marshal(o)
		Expect(err).NotTo(HaveOccurred())
		largest = max(largest, len(raw))
	}
	return largest, rbacEvaluations(shared, n, shootNS), len(shared) - 1
}

// shootsInSharedConfig returns the bench shoots found in the namespace's shared config. inSecret
// holds what earlier calls found in each data Secret.
func shootsInSharedConfig(c client.Client, namespace string, inSecret map[string]map[string]bool) (map[string]bool, error) {
	mrs := &resourcesv1alpha1.ManagedResourceList{}
	if err := c.List(ctx(), mrs, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	found := map[string]bool{}
	for _, mr := range mrs.Items {
		if !strings.HasPrefix(mr.Name, constants.ACLSharedManagedResourceName) {
			continue
		}
		for _, ref := range mr.Spec.SecretRefs {
			shoots, ok := inSecret[ref.Name]
			if !ok {
				secret := &corev1.Secret{}
				if err := c.Get(ctx(), client.ObjectKey{Namespace: namespace, Name: ref.Name}, secret); err != nil {
					return nil, err
				}
				objs, err := managedresources.ExtractObjectsFromSecret(kubernetes.SeedCodec.UniversalDeserializer(), secret)
				if err != nil {
					return nil, err
				}
				shoots = map[string]bool{}
				for _, m := range benchShootInConfig.FindAllStringSubmatch(toJSON(objs), -1) {
					shoots[m[1]] = true
				}
				inSecret[ref.Name] = shoots
			}
			for ns := range shoots {
				found[ns] = true
			}
		}
	}
	return found, nil
}

// sharedSecretRefs are the data Secrets each shared ManagedResource of the namespace refers to:
// a rewritten object gets a new one.
func sharedSecretRefs(c client.Client, namespace string) map[string]string {
	GinkgoHelper()
	mrs := &resourcesv1alpha1.ManagedResourceList{}
	Expect(c.List(ctx(), mrs, client.InNamespace(namespace))).To(Succeed())
	out := map[string]string{}
	for _, mr := range mrs.Items {
		if strings.HasPrefix(mr.Name, constants.ACLSharedManagedResourceName) {
			var refs []string
			for _, r := range mr.Spec.SecretRefs {
				refs = append(refs, r.Name)
			}
			out[mr.Name] = strings.Join(refs, ",")
		}
	}
	return out
}

// rbacEvaluations follows a CONNECT request on 8443 through the shared objects as Envoy would
// (the listener filter's dispatch config, then the shard's RBAC config it names), for a sample
// of shoots, and returns the most RBAC configs any request was evaluated against; it checks the
// decisions on the way (a shoot's own CIDR allowed, another address denied).
func rbacEvaluations(shared []client.Object, n int, shootNS func(int) string) int {
	GinkgoHelper()
	configs := map[string]*corev3.TypedExtensionConfig{}
	for _, o := range shared {
		ef, ok := o.(*istionetworkingv1alpha3.EnvoyFilter)
		if !ok {
			continue
		}
		for _, p := range ef.Spec.ConfigPatches {
			if p.ApplyTo != istioapinetworkingv1alpha3.EnvoyFilter_EXTENSION_CONFIG {
				continue
			}
			raw, err := protojson.Marshal(p.Patch.Value)
			Expect(err).NotTo(HaveOccurred())
			tec := &corev3.TypedExtensionConfig{}
			Expect(protojson.Unmarshal(raw, tec)).To(Succeed())
			configs[tec.GetName()] = tec
		}
	}
	most := 0
	for i := 0; i < n; i += max(1, n/50) {
		for _, tc := range []struct {
			client string
			want   bool
		}{{fmt.Sprintf("%d.%d.3.7", 11+i/256, i%256), true}, {"8.8.8.8", false}} {
			req := envoytest.Request{Headers: map[string]string{envoy.DestinationHeader: shootNS(i) + "--kube-apiserver-socket"}, Client: netip.MustParseAddr(tc.client)}
			evaluations, cfg := 0, configs[envoy.HTTPFilterName]
			Expect(cfg).NotTo(BeNil(), "no dispatch config")
			var allowed bool
			for cfg != nil {
				inner, err := cfg.GetTypedConfig().UnmarshalNew()
				Expect(err).NotTo(HaveOccurred())
				switch c := inner.(type) {
				case *httprbacv3.RBAC:
					evaluations++
					allowed, err = envoytest.Allowed(c, req)
					Expect(err).NotTo(HaveOccurred())
					cfg = nil
				case *matchingv3.ExtensionWithMatcher:
					action, err := envoytest.Select(c.GetXdsMatcher(), req)
					Expect(err).NotTo(HaveOccurred())
					Expect(action).NotTo(BeNil(), "no shard for %s", shootNS(i))
					exec := &compositev3.ExecuteFilterAction{}
					Expect(action.GetTypedConfig().UnmarshalTo(exec)).To(Succeed())
					cfg = configs[exec.GetDynamicConfig().GetName()]
					Expect(cfg).NotTo(BeNil(), "the shard %s is not served", exec.GetDynamicConfig().GetName())
				default:
					Fail(fmt.Sprintf("unexpected config %T", inner))
				}
			}
			Expect(allowed).To(Equal(tc.want), "%s from %s", shootNS(i), tc.client)
			most = max(most, evaluations)
		}
	}
	return most
}

// cpuProfile starts a CPU profile of the row when BENCH_CPU_PROFILE names a directory
// (acl-<shoots>.cpu: manager, writers and the test's polling; go tool pprof tells them apart by
// function) and returns what stops it.
func cpuProfile(shoots int) func() {
	GinkgoHelper()
	dir := os.Getenv("BENCH_CPU_PROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("acl-%d.cpu", shoots)))
	Expect(err).NotTo(HaveOccurred())
	Expect(pprof.StartCPUProfile(f)).To(Succeed())
	return func() {
		pprof.StopCPUProfile()
		Expect(f.Close()).To(Succeed())
	}
}

// liveHeap collects garbage and returns the heap still in use: the manager's caches and state
// once the test's decoded objects are dropped. With BENCH_HEAP_PROFILE set to a directory, it
// writes the heap profile there (acl-<shoots>.heap, for go tool pprof).
func liveHeap(shoots int) uint64 {
	GinkgoHelper()
	runtime.GC()
	if dir := os.Getenv("BENCH_HEAP_PROFILE"); dir != "" {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("acl-%d.heap", shoots)))
		Expect(err).NotTo(HaveOccurred())
		Expect(pprof.WriteHeapProfile(f)).To(Succeed())
		Expect(f.Close()).To(Succeed())
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// benchSizes are the numbers of shoots of the table's rows, BENCH_ACL_SHOOTS="1000,5000" by default.
func benchSizes() []int {
	spec := os.Getenv("BENCH_ACL_SHOOTS")
	if spec == "" {
		spec = "1000,5000"
	}
	var out []int
	for _, f := range strings.Split(spec, ",") {
		var n int
		_, err := fmt.Sscanf(strings.TrimSpace(f), "%d", &n)
		Expect(err).NotTo(HaveOccurred(), "BENCH_ACL_SHOOTS=%q", spec)
		out = append(out, n)
	}
	return out
}
