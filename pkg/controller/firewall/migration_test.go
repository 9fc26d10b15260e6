package firewall

import (
	"context"
	"encoding/json"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

var _ = Describe("restoreState", func() {
	const ns = "shoot--p--restore"

	// restoring builds an actuator whose status updates of Firewalls conflict
	// the first `conflicts` times, as when the manager writes the new
	// Firewall's status between the restore's read and its update.
	restoring := func(conflicts int) (*actuator, client.Client, *extensionsv1alpha1.Extension) {
		GinkgoHelper()
		scheme := runtime.NewScheme()
		Expect(firewallv1alpha1.AddToScheme(scheme)).To(Succeed())
		Expect(extensionsv1alpha1.AddToScheme(scheme)).To(Succeed())
		c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&firewallv1alpha1.Firewall{}).
			WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				// As the kube-apiserver does: a create ignores the status.
				if fw, ok := obj.(*firewallv1alpha1.Firewall); ok {
					fw.Status = firewallv1alpha1.FirewallStatus{}
				}
				return c.Create(ctx, obj, opts...)
			}, SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if _, ok := obj.(*firewallv1alpha1.Firewall); ok && conflicts > 0 {
					conflicts--
					return apierrors.NewConflict(schema.GroupResource{Group: firewallv1alpha1.GroupName, Resource: "firewalls"}, obj.GetName(), nil)
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			}}).Build()
		fw := firewallv1alpha1.Firewall{ObjectMeta: metav1.ObjectMeta{Name: "firewall-abc-0"},
			Status: firewallv1alpha1.FirewallStatus{MachineStatus: &firewallv1alpha1.MachineStatus{MachineID: "m-1"}}}
		raw, err := json.Marshal(state{Firewalls: []firewallv1alpha1.Firewall{fw}})
		Expect(err).NotTo(HaveOccurred())
		ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "firewall", Namespace: ns}}
		ex.Status.State = &runtime.RawExtension{Raw: raw}
		return &actuator{client: c, direct: c}, c, ex
	}

	It("restores a Firewall's machine ID although another writer's status update came first", func(ctx SpecContext) {
		a, c, ex := restoring(2)
		Expect(a.restoreState(ctx, logr.Discard(), ex)).To(Succeed())
		fw := &firewallv1alpha1.Firewall{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "firewall-abc-0"}, fw)).To(Succeed())
		Expect(fw.Status.MachineStatus).To(HaveField("MachineID", "m-1"), "the same machine: no second one is created")
	})

	It("names the Firewall when the conflicts do not end", func(ctx SpecContext) {
		a, _, ex := restoring(100)
		Expect(a.restoreState(ctx, logr.Discard(), ex)).To(MatchError(ContainSubstring("restoring the machine ID of Firewall firewall-abc-0")))
	})
})
