package rollrequest_test

import (
	"context"
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/managertest"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/rollrequest"
)

var _ = Describe("Reconciler", func() {
	const ns = "shoot--p--s"
	var (
		ctx      = context.Background()
		seed     client.Client
		shoot    client.Client
		recorder *events.FakeRecorder
		r        *Reconciler
		req      = reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "firewall"}}
		selector = map[string]string{"firewall.metal-firewall.io/deployment": "firewall"}
	)

	monitor := func(name string, annotations map[string]string) *firewallv1alpha1.FirewallMonitor {
		return &firewallv1alpha1.FirewallMonitor{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: firewallv1alpha1.FirewallMonitorNamespace, Annotations: annotations}}
	}
	deployment := func() *firewallv1alpha1.FirewallDeployment {
		d := &firewallv1alpha1.FirewallDeployment{}
		Expect(seed.Get(ctx, req.NamespacedName, d)).To(Succeed())
		return d
	}
	setup := func(shootFuncs interceptor.Funcs, d *firewallv1alpha1.FirewallDeployment, monitors ...client.Object) {
		clk := clocktesting.NewFakeClock(metav1.Now().Time)
		fw := &firewallv1alpha1.Firewall{ObjectMeta: metav1.ObjectMeta{Name: "firewall-abc-0", Namespace: ns, Labels: selector}}
		seed = managertest.NewClient(clk, interceptor.Funcs{}, d, fw)
		shoot = managertest.NewClient(clk, shootFuncs, monitors...)
		recorder = events.NewFakeRecorder(10)
		r = &Reconciler{Client: seed, ShootClient: func(context.Context, string) (client.Client, error) { return shoot, nil }, Recorder: recorder}
	}
	newDeployment := func(replicas int32) *firewallv1alpha1.FirewallDeployment {
		return &firewallv1alpha1.FirewallDeployment{ObjectMeta: metav1.ObjectMeta{Name: "firewall", Namespace: ns},
			Spec: firewallv1alpha1.FirewallDeploymentSpec{Replicas: replicas, Selector: selector}}
	}

	It("rolls once for a request on the monitor of one of its firewalls, and removes it", func() {
		setup(interceptor.Funcs{}, newDeployment(1), monitor("firewall-abc-0", map[string]string{firewallv1alpha1.AnnotationRollSet: "true"}))
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		roll := deployment().Annotations[firewallv1alpha1.AnnotationRoll]
		Expect(roll).To(HavePrefix("shoot-"))
		Expect(recorder.Events).To(Receive(And(ContainSubstring(ReasonRollRequested), ContainSubstring(`FirewallMonitor firewall/"firewall-abc-0"`))))
		m := &firewallv1alpha1.FirewallMonitor{}
		Expect(shoot.Get(ctx, client.ObjectKey{Namespace: "firewall", Name: "firewall-abc-0"}, m)).To(Succeed())
		Expect(m.Annotations).To(BeEmpty())

		_, err = r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(deployment().Annotations[firewallv1alpha1.AnnotationRoll]).To(Equal(roll), "once")
		Expect(recorder.Events).NotTo(Receive())
	})

	It("reads the monitors' metadata only, never their status", func() {
		var listed []string
		setup(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			listed = append(listed, fmt.Sprintf("%T %s", list, list.GetObjectKind().GroupVersionKind().Kind))
			return c.List(ctx, list, opts...)
		}}, newDeployment(1), monitor("firewall-abc-0", map[string]string{firewallv1alpha1.AnnotationRollSet: "true"}))
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(deployment().Annotations).To(HaveKey(firewallv1alpha1.AnnotationRoll))
		Expect(listed).To(ConsistOf("*v1.PartialObjectMetadataList FirewallMonitorList", "*v1.PartialObjectMetadataList FirewallMonitorList"))
	})

	It("reads a shoot without metal-stack's FirewallMonitor kind, whose kube-apiserver answers 404 for it", func() {
		setup(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if list.GetObjectKind().GroupVersionKind().Group == "firewall.metal-stack.io" {
				return apierrors.NewNotFound(schema.GroupResource{Group: "firewall.metal-stack.io", Resource: "firewallmonitors"}, "")
			}
			return c.List(ctx, list, opts...)
		}}, newDeployment(1), monitor("firewall-abc-0", map[string]string{firewallv1alpha1.AnnotationRollSet: "true"}))
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(deployment().Annotations).To(HaveKey(firewallv1alpha1.AnnotationRoll), "our monitor's request")
	})

	It("rolls no second time when a previous try stopped after the roll, before removing the request", func() {
		d := newDeployment(1)
		d.Annotations = map[string]string{firewallv1alpha1.AnnotationRoll: "shoot-1"}
		setup(interceptor.Funcs{}, d, monitor("firewall-abc-0", map[string]string{
			firewallv1alpha1.AnnotationRollSet: "true", firewallv1alpha1.AnnotationRollSetAcknowledged: "shoot-1"}))
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(deployment().Annotations[firewallv1alpha1.AnnotationRoll]).To(Equal("shoot-1"))
		Expect(recorder.Events).NotTo(Receive())
		m := &firewallv1alpha1.FirewallMonitor{}
		Expect(shoot.Get(ctx, client.ObjectKey{Namespace: "firewall", Name: "firewall-abc-0"}, m)).To(Succeed())
		Expect(m.Annotations).To(BeEmpty())
	})

	It("does not roll when it cannot acknowledge the request first", func() {
		setup(interceptor.Funcs{Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return errors.New("shoot unavailable")
		}}, newDeployment(1), monitor("firewall-abc-0", map[string]string{firewallv1alpha1.AnnotationRollSet: "true"}))
		_, err := r.Reconcile(ctx, req)
		Expect(err).To(MatchError(ContainSubstring("acknowledging the roll request on FirewallMonitor firewall-abc-0: shoot unavailable")))
		Expect(deployment().Annotations).NotTo(HaveKey(firewallv1alpha1.AnnotationRoll))
	})

	It("ignores monitors of other firewalls, removes a request that is not true, and asks nothing of a hibernated shoot", func() {
		setup(interceptor.Funcs{}, newDeployment(1),
			monitor("firewall-other-0", map[string]string{firewallv1alpha1.AnnotationRollSet: "true"}),
			monitor("firewall-abc-0", map[string]string{firewallv1alpha1.AnnotationRollSet: "no"}))
		_, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(deployment().Annotations).NotTo(HaveKey(firewallv1alpha1.AnnotationRoll))
		m := &firewallv1alpha1.FirewallMonitor{}
		Expect(shoot.Get(ctx, client.ObjectKey{Namespace: "firewall", Name: "firewall-abc-0"}, m)).To(Succeed())
		Expect(m.Annotations).To(BeEmpty())
		Expect(shoot.Get(ctx, client.ObjectKey{Namespace: "firewall", Name: "firewall-other-0"}, m)).To(Succeed())
		Expect(m.Annotations).To(HaveKey(firewallv1alpha1.AnnotationRollSet))

		setup(interceptor.Funcs{}, newDeployment(0), monitor("firewall-abc-0", map[string]string{firewallv1alpha1.AnnotationRollSet: "true"}))
		r.ShootClient = func(context.Context, string) (client.Client, error) { panic("asked a hibernated shoot") }
		result, err := r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(result.RequeueAfter).To(BeZero())
	})
})
