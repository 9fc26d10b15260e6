package acl_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	matchingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/matching/v3"
	compositev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/composite/v3"
	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy/envoytest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// The reconcile table runs with BENCH_TABLE=true (make bench), on a control plane of its own with
// the extension binary as the chart runs it, in a process of its own: Gardener's Extension
// reconciler, the health check at its default period, the binary's client limits. It reconciles
// 1,000, then 5,000 ACL shoots (BENCH_ACL_SHOOTS) on one ingress gateway; each row is the growth
// to that number of shoots, then one shoot's change. Memory and CPU are the process's, read from
// the kernel.
var _ = Describe("reconciling many ACL shoots", Label("bench"), Ordered, func() {
	const benchIngress = "istio-ingress--bench"
	benchLabels := map[string]string{"app": "istio-ingressgateway", "istio": "ingressgateway--bench"}
	var c client.Client
	var cfg *rest.Config
	var extension *framework.ExtensionProcess
	// cpu reads the CPU time so far of the extension, the kube-apiserver, etcd and this process
	// (the writers and the test's polling).
	var cpu func() [4]float64

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

		dir := GinkgoT().TempDir()
		binary, err := framework.BuildExtension(dir)
		Expect(err).NotTo(HaveOccurred())
		// No machine provider flags: the firewall controllers run without one, as on a seed
		// whose operator uses only acl.
		extension, err = framework.StartExtensionProcess(ctx(), binary, dir, cp,
			append([]string{"--ignore-operation-annotation=true", "--acl-always-allowed-cidrs=" + operatorCIDR}, strings.Fields(os.Getenv("BENCH_EXTENSION_ARGS"))...)...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { extension.Stop(os.Getenv("BENCH_KEEP_LOG")) })
		apiServer, etcd, err := cp.Pids()
		Expect(err).NotTo(HaveOccurred())
		cpu = func() [4]float64 {
			return [4]float64{extension.CPUSeconds(), framework.CPUSeconds(apiServer), framework.CPUSeconds(etcd), framework.CPUSeconds(os.Getpid())}
		}

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
			"| ACL shoots (10 rule CIDRs each) | create objects | last write → all shoots in the shared config | shards | largest shared object | objects rewritten for one shoot's change (its time; when its status showed the new rule) | RBAC evaluations per request | CPU while growing: extension / kube-apiserver / etcd / writers and test | extension peak RSS (VmHWM) | extension RSS after the row |",
			"|---|---|---|---|---|---|---|---|---|---|",
		}
		fmt.Println() // Ginkgo's progress marks end without a newline.
		for _, r := range header {
			fmt.Println(r)
		}
		created := 0
		var requestRows []string
		for _, n := range benchSizes() {
			requestsBefore := apiserverRequests(cfg)
			cpuBefore := cpu()
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
				perSecret, err := readShared(c, benchIngress, inSecret, shootsIn)
				g.Expect(err).NotTo(HaveOccurred())
				found := map[string]bool{}
				for _, shoots := range perSecret {
					for ns := range shoots {
						found[ns] = true
					}
				}
				missing := 0
				for i := range n {
					if !found[shootNS(i)] {
						missing++
					}
				}
				g.Expect(missing).To(BeZero(), "shoots missing in the shared config")
			}).WithTimeout(60 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			inShared := time.Since(lastWrite)
			cpuAfter := cpu()
			var cpuUsed []string
			for i := range cpuAfter {
				cpuUsed = append(cpuUsed, fmt.Sprintf("%.0f", cpuAfter[i]-cpuBefore[i]))
			}
			growth := time.Since(start)
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
			// Only Secrets written after the update are decoded (those before cannot hold the new
			// CIDR), each once: the first poll decoding all shards took longer than the change.
			holds := map[string]bool{}
			for _, refs := range before {
				for _, name := range refs {
					holds[name] = false
				}
			}
			// When the controller reported the new rule in the Extension's status splits the time
			// into the way to the controller and the controller's own work.
			ruleCIDR := fmt.Sprintf(`"%d.%d.10.0/24"`, 11+(n/2)/256, (n/2)%256)
			var statusAfter time.Duration
			Eventually(func(g Gomega) {
				if statusAfter == 0 {
					g.Expect(c.Get(ctx(), client.ObjectKeyFromObject(ex), ex)).To(Succeed())
					if ex.Status.ProviderStatus != nil && strings.Contains(string(ex.Status.ProviderStatus.Raw), ruleCIDR) {
						statusAfter = time.Since(changeStart)
					}
				}
				found, err := readShared(c, benchIngress, holds, func(json string) bool { return strings.Contains(json, newCIDR) })
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(found).To(ContainElement(true))
			}).WithTimeout(10 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
			changeTime := time.Since(changeStart)
			after := sharedSecretRefs(c, benchIngress)
			rewritten := 0
			for name, ref := range after {
				if !slices.Equal(before[name], ref) {
					rewritten++
				}
			}
			requestRows = append(requestRows, fmt.Sprintf("| %d | %s |", n, topRequests(requestsBefore, apiserverRequests(cfg), 12)))

			fmt.Printf("| %d | %s | %s | %d | %.1f KiB | %d (%s; status after %s) | %d | %s s in %.0f s | %.0f MiB | %.0f MiB |\n",
				n, createTime.Round(10*time.Millisecond), inShared.Round(10*time.Millisecond), shards,
				float64(largest)/1024, rewritten, changeTime.Round(10*time.Millisecond), statusAfter.Round(10*time.Millisecond), evaluations,
				strings.Join(cpuUsed, " / "), growth.Seconds(), float64(extension.StatusKiB("VmHWM"))/1024, float64(extension.StatusKiB("VmRSS"))/1024)
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

// readShared returns read's answer for each data Secret the namespace's shared ManagedResources
// refer to now, given the Secret's objects as JSON. Data Secrets are immutable and named by their
// content: memo keeps each answer, so a Secret is decoded once however often this is called.
func readShared[T any](c client.Client, namespace string, memo map[string]T, read func(json string) T) ([]T, error) {
	mrs, err := framework.ACLSharedManagedResources(ctx(), c, namespace)
	if err != nil {
		return nil, err
	}
	var out []T
	for _, mr := range mrs {
		for _, ref := range mr.Spec.SecretRefs {
			answer, ok := memo[ref.Name]
			if !ok {
				objs, err := framework.DataSecretObjects(ctx(), c, namespace, ref.Name)
				if err != nil {
					return nil, err
				}
				answer = read(toJSON(objs))
				memo[ref.Name] = answer
			}
			out = append(out, answer)
		}
	}
	return out, nil
}

// shootsIn are the bench shoots found in a shared object's JSON.
func shootsIn(json string) map[string]bool {
	shoots := map[string]bool{}
	for _, m := range benchShootInConfig.FindAllStringSubmatch(json, -1) {
		shoots[m[1]] = true
	}
	return shoots
}

// sharedSecretRefs are the data Secrets each shared ManagedResource of the namespace refers to:
// a rewritten object gets a new one.
func sharedSecretRefs(c client.Client, namespace string) map[string][]string {
	GinkgoHelper()
	mrs, err := framework.ACLSharedManagedResources(ctx(), c, namespace)
	Expect(err).NotTo(HaveOccurred())
	out := map[string][]string{}
	for _, mr := range mrs {
		for _, r := range mr.Spec.SecretRefs {
			out[mr.Name] = append(out[mr.Name], r.Name)
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
