package acl

import (
	"context"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// extensionLists counts the Lists of Extensions, each the start of a rebuild round.
type extensionLists struct {
	client.Reader
	n int
}

func (r *extensionLists) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*extensionsv1alpha1.ExtensionList); ok {
		r.n++
	}
	return r.Reader.List(ctx, list, opts...)
}

var _ = Describe("a shoot's resync", func() {
	labels := map[string]string{"istio": "ingressgateway"}
	rule := func(cidr string) *runtime.RawExtension {
		return &runtime.RawExtension{Raw: []byte(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["` + cidr + `"]}}`)}
	}

	It("rebuilds nothing while the shared filters hold the shoot as it is; its change or the heal interval does", func() {
		ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: "shoot--p--a"}}
		ex.Spec.Type = constants.ACLExtensionType
		ex.Spec.ProviderConfig = rule("192.0.2.0/24")
		a := newTestActuator(Config{}, ex,
			cluster(`{"networks":{"nodes":"10.1.0.0/16","pods":"10.2.0.0/16","services":"10.3.0.0/16"}}`, `"spec":{"networking":{"nodes":"10.250.0.0/16"}}`),
			gateway("shoot--p--a", "kube-apiserver", labels, "api.a.example.com"),
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: "istio-ingress", Labels: labels}})
		lists := &extensionLists{Reader: a.cache}
		a.cache = lists
		now := time.Now()
		a.shared.now = func() time.Time { return now }
		reconcile := func() {
			GinkgoHelper()
			current := &extensionsv1alpha1.Extension{}
			Expect(a.client.Get(context.Background(), client.ObjectKeyFromObject(ex), current)).To(Succeed())
			Expect(a.Reconcile(context.Background(), logr.Discard(), current)).To(Succeed())
		}

		reconcile()
		Expect(lists.n).To(Equal(1), "the first reconciliation builds the shared filter")
		Expect(sharedExists(a, "istio-ingress")).To(BeTrue())
		reconcile()
		reconcile()
		Expect(lists.n).To(Equal(1), "an unchanged shoot's resync rebuilt the shared filter")

		current := &extensionsv1alpha1.Extension{}
		Expect(a.client.Get(context.Background(), client.ObjectKeyFromObject(ex), current)).To(Succeed())
		current.Spec.ProviderConfig = rule("198.51.100.0/24")
		Expect(a.client.Update(context.Background(), current)).To(Succeed())
		reconcile()
		Expect(lists.n).To(Equal(2), "the shoot's change did not reach the shared filter")
		reconcile()
		Expect(lists.n).To(Equal(2))

		now = now.Add(sharedHealInterval)
		reconcile()
		Expect(lists.n).To(Equal(3), "after the heal interval a resync rebuilds again")

		By("a failed rebuild of another shoot's change is done by this shoot's next resync")
		failing := &gatedReader{Reader: lists, entered: make(chan struct{}), release: make(chan struct{}), fail: true}
		close(failing.release)
		a.cache = failing
		Expect(a.reconcileShared(context.Background(), []string{"istio-ingress"})).NotTo(Succeed())
		a.cache = lists
		reconcile()
		Expect(lists.n).To(Equal(4), "the pending namespace waited for the heal interval")
		Expect(a.shared.pending).To(BeEmpty())
	})
})
