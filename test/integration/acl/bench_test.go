package acl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	aclhealthcheck "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/healthcheck"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// The reconcile table runs with BENCH_TABLE=true (make bench), on a control plane and manager of
// its own with the binary's settings: Gardener's Extension reconciler with 5 workers, the health
// check at its default period, no log output. It reconciles 10, then 100, then 1,000 ACL shoots
// (BENCH_ACL_SHOOTS) on one ingress gateway; each row is the growth to that number of shoots.
var _ = Describe("reconciling many ACL shoots", Label("bench"), Ordered, func() {
	const benchIngress = "istio-ingress--bench"
	benchLabels := map[string]string{"app": "istio-ingressgateway", "istio": "ingressgateway--bench"}
	var c client.Client

	BeforeAll(func() {
		if os.Getenv("BENCH_TABLE") != "true" {
			Skip("set BENCH_TABLE=true (make bench)")
		}
		cp, err := testenv.Start(testenv.Options{Name: "acl-bench", CRDDirectoryPaths: testenv.SeedCRDPaths()})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(cp.Stop()).To(Succeed()) })
		c, err = client.New(cp.Config, client.Options{Scheme: kubernetes.SeedScheme})
		Expect(err).NotTo(HaveOccurred())

		mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
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

	It("prints time, memory and the shared object's size as shoots grow", func() {
		shootNS := func(i int) string { return fmt.Sprintf("shoot--bench--s%d", i) }
		// Three CIDRs in each shoot's rule, distinct across shoots; with the 7 always allowed (seed
		// nodes and pods, shoot nodes IPv4 and IPv6, egress, the operator's) each shoot brings 10.
		// At 10 rule CIDRs (17 in all) the shared filter of 1,000 shoots would be 1.58 MB, over the
		// 1.4 MiB the controller allows one object: about 900 such shoots fit on one gateway.
		ruleOf := func(i int) *k8sruntime.RawExtension {
			var cidrs []string
			for j := range 3 {
				cidrs = append(cidrs, fmt.Sprintf("%d.%d.%d.0/24", 11+i/256, i%256, j))
			}
			return rule("ALLOW", cidrs...)
		}

		header := []string{
			"| ACL shoots | create objects | all reconciled, shared filter complete | shared filter rewrites | shared EnvoyFilter | its ManagedResource Secret | HTTP RBAC filters in it | peak Go heap (manager + test) |",
			"|---|---|---|---|---|---|---|---|",
		}
		fmt.Println() // Ginkgo's progress marks end without a newline.
		for _, r := range header {
			fmt.Println(r)
		}
		created := 0
		for _, n := range benchSizes() {
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
			mrBefore := &resourcesv1alpha1.ManagedResource{}
			_ = c.Get(ctx(), client.ObjectKey{Namespace: benchIngress, Name: constants.ACLSharedManagedResourceName}, mrBefore)

			start := time.Now()
			for ; created < n; created++ {
				ns := shootNS(created)
				createShootWith(c, ns, []string{fmt.Sprintf("api.s%d.bench.example.com", created)}, benchLabels)
				Expect(c.Create(ctx(), &extensionsv1alpha1.Extension{
					ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: ns},
					Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: constants.ACLExtensionType, ProviderConfig: ruleOf(created)}},
				})).To(Succeed())
			}
			createTime := time.Since(start)

			var sharedJSON []byte
			var secretBytes, httpFilters int
			Eventually(func(g Gomega) {
				list := &extensionsv1alpha1.ExtensionList{}
				g.Expect(c.List(ctx(), list)).To(Succeed())
				done := 0
				for _, ex := range list.Items {
					if strings.HasPrefix(ex.Namespace, "shoot--bench--") && ex.Status.LastOperation != nil && ex.Status.LastOperation.State == v1beta1.LastOperationStateSucceeded && ex.Status.ObservedGeneration == ex.Generation {
						done++
					}
				}
				g.Expect(done).To(Equal(n), "reconciled")
				objs, err := framework.ManagedResourceObjects(ctx(), c, benchIngress, constants.ACLSharedManagedResourceName)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(objs).To(HaveLen(1))
				sharedJSON, err = json.Marshal(objs[0])
				g.Expect(err).NotTo(HaveOccurred())
				missing := 0
				for i := range n {
					if !strings.Contains(string(sharedJSON), "."+shootNS(i)+".svc") {
						missing++
					}
				}
				g.Expect(missing).To(BeZero(), "shoots missing in the shared filter")
				ef := envoyFilterNamed(objs, benchIngress, "acl-http-connect")
				g.Expect(ef).NotTo(BeNil())
				httpFilters = 0
				for _, p := range ef.Spec.ConfigPatches {
					if p.ApplyTo == istioapinetworkingv1alpha3.EnvoyFilter_HTTP_FILTER {
						httpFilters++
					}
				}
				mr := &resourcesv1alpha1.ManagedResource{}
				g.Expect(c.Get(ctx(), client.ObjectKey{Namespace: benchIngress, Name: constants.ACLSharedManagedResourceName}, mr)).To(Succeed())
				secretBytes = 0
				for _, ref := range mr.Spec.SecretRefs {
					s := &corev1.Secret{}
					g.Expect(c.Get(ctx(), client.ObjectKey{Namespace: benchIngress, Name: ref.Name}, s)).To(Succeed())
					for _, v := range s.Data {
						secretBytes += len(v)
					}
				}
			}).WithTimeout(15 * time.Minute).WithPolling(time.Second).Should(Succeed())
			total := time.Since(start)
			close(stop)

			mr := &resourcesv1alpha1.ManagedResource{}
			Expect(c.Get(ctx(), client.ObjectKey{Namespace: benchIngress, Name: constants.ACLSharedManagedResourceName}, mr)).To(Succeed())
			fmt.Printf("| %d | %s | %s | %d | %.1f KiB | %.1f KiB | %d | %.0f MiB |\n",
				n, createTime.Round(10*time.Millisecond), total.Round(10*time.Millisecond), mr.Generation-mrBefore.Generation,
				float64(len(sharedJSON))/1024, float64(secretBytes)/1024, httpFilters, float64(peak.Load())/(1<<20))
		}
	})
})

// benchSizes are the numbers of shoots of the table's rows, BENCH_ACL_SHOOTS="10,100,1000" by default.
func benchSizes() []int {
	spec := os.Getenv("BENCH_ACL_SHOOTS")
	if spec == "" {
		spec = "10,100,1000"
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
