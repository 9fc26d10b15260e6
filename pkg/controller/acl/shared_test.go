package acl

import (
	"context"
	"errors"
	"testing"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
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

func sharedExists(t *testing.T, a *actuator, namespace string) bool {
	t.Helper()
	err := a.client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: constants.ACLSharedManagedResourceName}, &resourcesv1alpha1.ManagedResource{})
	return err == nil
}

func TestSharedRebuildsCoalesce(t *testing.T) {
	a := newTestActuator(t, Config{}, aclExtension("shoot--p--a", "istio-ingress"), aclExtension("shoot--p--b", "istio-ingress--zone-b"))
	g := &gatedReader{Reader: a.reader, entered: make(chan struct{}), release: make(chan struct{})}
	a.reader = g

	done := make(chan error)
	go func() { done <- a.reconcileShared(context.Background(), []string{"istio-ingress"}) }()
	<-g.entered
	// A rebuild is running: this call leaves its namespace to it and returns at once.
	if err := a.reconcileShared(context.Background(), []string{"istio-ingress--zone-b"}); err != nil {
		t.Fatal(err)
	}
	if sharedExists(t, a, "istio-ingress--zone-b") {
		t.Fatal("the coalesced namespace was rebuilt by the second caller")
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !sharedExists(t, a, "istio-ingress") || !sharedExists(t, a, "istio-ingress--zone-b") {
		t.Fatal("the running rebuild did not take the pending namespace")
	}
	if g.lists != 2 {
		t.Fatalf("want two rounds (each lists once), got %d", g.lists)
	}
}

func TestSharedRebuildKeepsFailedNamespacesPending(t *testing.T) {
	a := newTestActuator(t, Config{}, aclExtension("shoot--p--a", "istio-ingress"))
	g := &gatedReader{Reader: a.reader, entered: make(chan struct{}), release: make(chan struct{}), fail: true}
	close(g.release)
	a.reader = g
	if err := a.reconcileShared(context.Background(), []string{"istio-ingress"}); err == nil {
		t.Fatal("the failed rebuild must be reported to its caller, whose retry does it again")
	}
	g.fail = false
	// The next reconciliation of any shoot, for any namespace, rebuilds the failed one too.
	if err := a.reconcileShared(context.Background(), []string{"istio-ingress--other"}); err != nil {
		t.Fatal(err)
	}
	if !sharedExists(t, a, "istio-ingress") {
		t.Fatal("the failed namespace was dropped")
	}
}
