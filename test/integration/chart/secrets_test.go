package chart_test

import (
	"context"
	"strings"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

var _ = Describe("The extension's Secret reads", func() {
	// A seed holds every shoot's credentials and ManagedResource data: a cache of Secrets would
	// keep them all in the extension's memory and stream each change to it.
	It("go to the kube-apiserver by name: the extension keeps no watch on Secrets open", func(ctx SpecContext) {
		ensureIngress(ctx)
		namespace := "shoot--p--secrets"
		createShoot(ctx, namespace)
		ex := newExtension(namespace, "acl", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24"]}}`)
		Expect(admin.Create(ctx, ex)).To(Succeed())
		Eventually(lastOperation(ctx, ex)).Should(MatchRegexp(`^(Create|Reconcile) Succeeded$`))
		By("the shoot's ManagedResource and its data Secret were written, which reads the Secret first")
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ACLManagedResourceName}, &resourcesv1alpha1.ManagedResource{})).To(Succeed())

		// No kube-controller-manager runs here; the kube-apiserver's own watch (bootstrap tokens)
		// was open before the extension started.
		Expect(openWatches(ctx, "secrets")).To(Equal(secretWatchesBefore))
		Expect(openWatches(ctx, "extensions")).NotTo(BeZero(), "the metric counts the watches the cache opens")
	})
})

// secretWatchesBefore is the number of watches on Secrets open before the extension started.
var secretWatchesBefore float64

// openWatches is the number of watches on a resource the kube-apiserver holds open now
// (apiserver_longrunning_requests).
func openWatches(ctx context.Context, resource string) float64 {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(cp.Config)
	Expect(err).NotTo(HaveOccurred())
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	Expect(err).NotTo(HaveOccurred())
	family, ok := families["apiserver_longrunning_requests"]
	Expect(ok).To(BeTrue(), "the kube-apiserver reports apiserver_longrunning_requests")
	var sum float64
	for _, m := range family.GetMetric() {
		if label(m, "verb") == "WATCH" && label(m, "resource") == resource {
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
