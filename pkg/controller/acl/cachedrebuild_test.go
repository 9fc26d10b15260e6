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

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// frozenCache answers Extension lists with what it held when frozen: an informer cache that has
// not seen the latest writes.
type frozenCache struct {
	client.Reader
	extensions *extensionsv1alpha1.ExtensionList
}

func (f *frozenCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if l, ok := list.(*extensionsv1alpha1.ExtensionList); ok && f.extensions != nil {
		f.extensions.DeepCopyInto(l)
		return nil
	}
	return f.Reader.List(ctx, list, opts...)
}

var _ = Describe("a rebuild's statuses", func() {
	labels := map[string]string{"istio": "ingressgateway"}

	It("come from the cache once it shows what was written, and from a list around it while it lags", func(ctx SpecContext) {
		ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: "shoot--p--a"}}
		ex.Spec.Type = constants.ACLExtensionType
		ex.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["192.0.2.0/24"]}}`)}
		a := newTestActuator(Config{}, ex,
			cluster(`{"networks":{"nodes":"10.1.0.0/16","pods":"10.2.0.0/16","services":"10.3.0.0/16"}}`, `"spec":{"networking":{"nodes":"10.250.0.0/16"}}`),
			gateway("shoot--p--a", "kube-apiserver", labels, "api.a.example.com"),
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: "istio-ingress", Labels: labels}})
		apiLists := &extensionLists{Reader: a.reader}
		a.reader = apiLists
		cache := &frozenCache{Reader: a.cache}
		a.cache = cache
		a.shared.catchUp = 300 * time.Millisecond
		reconcile := func() {
			GinkgoHelper()
			current := &extensionsv1alpha1.Extension{}
			Expect(a.client.Get(ctx, client.ObjectKeyFromObject(ex), current)).To(Succeed())
			Expect(a.Reconcile(ctx, logr.Discard(), current)).To(Succeed())
		}
		// builtFromWritten says whether the last rebuild built the shoot as its status is now.
		builtFromWritten := func() bool {
			GinkgoHelper()
			current := &extensionsv1alpha1.Extension{}
			Expect(a.client.Get(ctx, client.ObjectKeyFromObject(ex), current)).To(Succeed())
			st, err := providerstatus.Decode(current)
			Expect(err).NotTo(HaveOccurred())
			Expect(st).NotTo(BeNil())
			return a.shared.built["istio-ingress"].shoots[ex.Namespace] == contribution(ex.Namespace, st)
		}

		reconcile()
		Expect(apiLists.n).To(BeZero(), "a cache that shows the written status is enough")
		Expect(builtFromWritten()).To(BeTrue())

		By("a cache that lags behind the shoot's new status")
		cache.extensions = &extensionsv1alpha1.ExtensionList{}
		Expect(a.client.List(ctx, cache.extensions)).To(Succeed())
		current := &extensionsv1alpha1.Extension{}
		Expect(a.client.Get(ctx, client.ObjectKeyFromObject(ex), current)).To(Succeed())
		current.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["198.51.100.0/24"]}}`)}
		Expect(a.client.Update(ctx, current)).To(Succeed())
		start := time.Now()
		reconcile()
		Expect(time.Since(start)).To(BeNumerically(">=", 300*time.Millisecond), "it waited for the cache first")
		Expect(apiLists.n).To(Equal(1), "then listed around it")
		Expect(builtFromWritten()).To(BeTrue(), "the shared filter holds the new status, not the cache's")

		By("the list settled what was written: the next rebuild does not wait for the stale cache again")
		cache.extensions = nil
		Expect(a.client.Get(ctx, client.ObjectKeyFromObject(ex), current)).To(Succeed())
		current.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["203.0.113.0/24"]}}`)}
		Expect(a.client.Update(ctx, current)).To(Succeed())
		reconcile()
		Expect(apiLists.n).To(Equal(1))
		Expect(builtFromWritten()).To(BeTrue())
	})
})
