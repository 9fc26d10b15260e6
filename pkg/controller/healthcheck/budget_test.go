package healthcheck

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

var _ = Describe("the health checks' request budget", func() {
	It("is their own, one for all kinds: spent, the health checks wait and the reconcilers do not", func(ctx SpecContext) {
		var requests atomic.Int32
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"metadata":{"name":"x","namespace":"shoot--p--s"}}`))
		}))
		DeferCleanup(server.Close)
		mapper := meta.NewDefaultRESTMapper(nil)
		mapper.Add(extensionsv1alpha1.SchemeGroupVersion.WithKind("Extension"), meta.RESTScopeNamespace)
		mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
		mgr, err := manager.New(&rest.Config{Host: server.URL, QPS: 100, Burst: 100}, manager.Options{
			Scheme:                 kubernetes.SeedScheme,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			MapperProvider:         func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
		})
		Expect(err).NotTo(HaveOccurred())

		// One request, then one per 100 s.
		hc, err := withBudget(mgr, 0.01)
		Expect(err).NotTo(HaveOccurred())
		ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: "shoot--p--s"}}
		Expect(hc.GetClient().Status().Update(ctx, ex)).To(Succeed())

		// client-go's limiter refuses at once what would outlast the deadline.
		short, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		Expect(hc.GetClient().Status().Update(short, ex)).To(MatchError(ContainSubstring("rate")))
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "shoot--p--s"}}
		Expect(hc.GetClient().Create(short, secret)).To(MatchError(ContainSubstring("rate")), "another kind, the same budget")
		Expect(requests.Load()).To(BeEquivalentTo(1))

		for range 5 {
			Expect(mgr.GetClient().Status().Update(ctx, ex)).To(Succeed())
		}
		Expect(requests.Load()).To(BeEquivalentTo(6), "the manager's client keeps its own budget")
		Expect(hc.GetConfig().QPS).To(BeEquivalentTo(float32(0.01)))
	})
})
