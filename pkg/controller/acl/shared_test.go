package acl

import (
	"context"
	"errors"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// gatedReader blocks its first List until released and counts the Lists; fail makes them fail.
type gatedReader struct {
	client.Reader
	entered, release chan struct{}
	lists            int
	fail             bool
}

func (g *gatedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	g.lists++
	if g.lists == 1 {
		close(g.entered)
		<-g.release
	}
	if g.fail {
		return errors.New("apiserver unavailable")
	}
	return g.Reader.List(ctx, list, opts...)
}

func aclExtension(namespace, ingressNamespace string) *extensionsv1alpha1.Extension {
	ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: namespace}}
	ex.Spec.Type = constants.ACLExtensionType
	ex.Status.ProviderStatus = &runtime.RawExtension{Raw: []byte(`{"action":"ALLOW","type":"remote_ip","allowedCIDRs":["1.2.3.0/24"],"ingressNamespaces":["` + ingressNamespace + `"]}`)}
	return ex
}

func sharedExists(a *actuator, namespace string) bool {
	err := a.client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: constants.ACLSharedManagedResourceName}, &resourcesv1alpha1.ManagedResource{})
	return err == nil
}

var _ = Describe("shared rebuilds", func() {
	It("coalesce: a rebuild that is running takes the namespaces of the callers meanwhile", func() {
		a := newTestActuator(Config{}, aclExtension("shoot--p--a", "istio-ingress"), aclExtension("shoot--p--b", "istio-ingress--zone-b"))
		g := &gatedReader{Reader: a.cache, entered: make(chan struct{}), release: make(chan struct{})}
		a.cache = g

		done := make(chan error)
		go func() { done <- a.reconcileShared(context.Background(), []string{"istio-ingress"}) }()
		<-g.entered
		// A rebuild is running: this call leaves its namespace to it and returns at once.
		Expect(a.reconcileShared(context.Background(), []string{"istio-ingress--zone-b"})).To(Succeed())
		Expect(sharedExists(a, "istio-ingress--zone-b")).To(BeFalse(), "the coalesced namespace was rebuilt by the second caller")
		close(g.release)
		Expect(<-done).To(Succeed())
		Expect(sharedExists(a, "istio-ingress")).To(BeTrue(), "the running rebuild did its own namespace")
		Expect(sharedExists(a, "istio-ingress--zone-b")).To(BeTrue(), "the running rebuild did not take the pending namespace")
		Expect(g.lists).To(Equal(2), "two rounds, each lists once")
	})

	It("keep the namespaces of a failed rebuild pending", func() {
		a := newTestActuator(Config{}, aclExtension("shoot--p--a", "istio-ingress"))
		g := &gatedReader{Reader: a.cache, entered: make(chan struct{}), release: make(chan struct{}), fail: true}
		close(g.release)
		a.cache = g
		Expect(a.reconcileShared(context.Background(), []string{"istio-ingress"})).NotTo(Succeed(),
			"the failed rebuild must be reported to its caller, whose retry does it again")
		g.fail = false
		// The next reconciliation of any shoot, for any namespace, rebuilds the failed one too.
		Expect(a.reconcileShared(context.Background(), []string{"istio-ingress--other"})).To(Succeed())
		Expect(sharedExists(a, "istio-ingress")).To(BeTrue(), "the failed namespace was dropped")
	})
})
