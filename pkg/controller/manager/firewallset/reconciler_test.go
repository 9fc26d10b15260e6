package firewallset_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/managertest"
)

const (
	namespace     = "shoot--p--s"
	healthTimeout = 20 * time.Minute
	// hold stands in for the firewall controller's finalizer: a Firewall
	// with it lingers, being deleted, until the spec lets it go.
	hold = "test.metal-firewall.io/hold"
)

var selector = map[string]string{"firewall.metal-firewall.io/shoot": "s", firewallv1alpha1.LabelTemplateHash: "abc"}

func newSet() *firewallv1alpha1.FirewallSet {
	return &firewallv1alpha1.FirewallSet{
		ObjectMeta: metav1.ObjectMeta{Name: "shoot-firewall-abc", Namespace: namespace},
		Spec: firewallv1alpha1.FirewallSetSpec{
			Replicas: 2,
			Selector: selector,
			Template: firewallv1alpha1.FirewallTemplateSpec{
				Metadata: firewallv1alpha1.TemplateMetadata{Labels: selector, Annotations: map[string]string{"note": "from the template"}},
				Spec: firewallv1alpha1.FirewallSpec{
					Size: "c1-xlarge-x86", Image: "firewall-ubuntu-3.0", Partition: "local", Project: "p1",
					Networks:            []string{"internet", "tenant"},
					FirewallTrafficSpec: firewallv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.1.0/24"}},
					AgentVersion:        "v0.1.0",
				},
			},
		},
	}
}

var _ = Describe("Reconciler", func() {
	var (
		ctx context.Context
		clk *testclock.FakeClock
		c   client.Client
		r   *firewallset.Reconciler
		set *firewallv1alpha1.FirewallSet
	)
	BeforeEach(func() {
		ctx = context.Background()
		clk = testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		set = newSet()
	})
	start := func(objs ...client.Object) {
		GinkgoHelper()
		c = managertest.NewClient(clk, interceptor.Funcs{})
		r = &firewallset.Reconciler{Client: c, Clock: clk, HealthTimeout: healthTimeout}
		Expect(c.Create(ctx, set)).To(Succeed())
		for _, o := range objs {
			Expect(c.Create(ctx, o)).To(Succeed())
		}
	}
	reconcileOnce := func() reconcile.Result {
		GinkgoHelper()
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(set)})
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	firewalls := func() []firewallv1alpha1.Firewall {
		GinkgoHelper()
		list := &firewallv1alpha1.FirewallList{}
		Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		return list.Items
	}
	names := func() []string {
		var out []string
		for _, fw := range firewalls() {
			out = append(out, fw.Name)
		}
		return out
	}
	get := func(name string) *firewallv1alpha1.Firewall {
		GinkgoHelper()
		fw := &firewallv1alpha1.Firewall{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, fw)).To(Succeed())
		return fw
	}
	update := func(obj client.Object, mutate func()) {
		GinkgoHelper()
		Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		mutate()
		Expect(c.Update(ctx, obj)).To(Succeed())
	}
	setStatus := func(name string, mutate func(*firewallv1alpha1.FirewallStatus)) {
		GinkgoHelper()
		fw := get(name)
		patch := client.MergeFrom(fw.DeepCopy())
		mutate(&fw.Status)
		Expect(c.Status().Patch(ctx, fw, patch)).To(Succeed())
	}
	markReady := func(name string) {
		GinkgoHelper()
		setStatus(name, func(s *firewallv1alpha1.FirewallStatus) {
			meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: firewallv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"})
		})
	}
	orphan := func(name string, labels map[string]string) *firewallv1alpha1.Firewall {
		return &firewallv1alpha1.Firewall{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}, Spec: set.Spec.Template.Spec}
	}
	status := func() firewallv1alpha1.FirewallSetStatus {
		GinkgoHelper()
		Expect(c.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		return set.Status
	}

	It("creates the missing Firewalls under the lowest free names, from the template, owned by the set", func() {
		start()
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0", "shoot-firewall-abc-1"))
		fw := get("shoot-firewall-abc-0")
		Expect(fw.Labels).To(Equal(selector))
		Expect(fw.Annotations).To(HaveKeyWithValue("note", "from the template"))
		Expect(fw.Spec).To(Equal(set.Spec.Template.Spec))
		Expect(metav1.GetControllerOf(fw)).To(HaveField("UID", set.UID))
		Expect(set.UID).NotTo(BeEmpty())

		Expect(c.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		Expect(set.Finalizers).To(ContainElement(firewallset.Finalizer))

		By("counting them on the next pass, which their creation triggers, and creating none more")
		Expect(reconcileOnce().RequeueAfter).To(Equal(healthTimeout), "to count a Firewall that never becomes ready as unhealthy")
		Expect(names()).To(HaveLen(2))
		Expect(status()).To(Equal(firewallv1alpha1.FirewallSetStatus{ObservedGeneration: set.Generation, Replicas: 2, ProgressingReplicas: 2}))
	})

	It("fills the gaps in the names", func() {
		set.Spec.Replicas = 3
		start()
		reconcileOnce()
		Expect(c.Delete(ctx, get("shoot-firewall-abc-1"))).To(Succeed())
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0", "shoot-firewall-abc-1", "shoot-firewall-abc-2"))
	})

	It("replaces a Firewall that is being deleted under another name", func() {
		set.Spec.Replicas = 1
		start()
		reconcileOnce()
		first := get("shoot-firewall-abc-0")
		update(first, func() { controllerutil.AddFinalizer(first, hold) })
		Expect(c.Delete(ctx, first)).To(Succeed())
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0", "shoot-firewall-abc-1"))
		reconcileOnce()
		Expect(names()).To(HaveLen(2))
		Expect(status().Replicas).To(BeEquivalentTo(1), "a Firewall being deleted does not count")
	})

	It("scales down the not-ready Firewalls first, then the newest", func() {
		set.Spec.Replicas = 1
		start()
		for _, n := range []int32{1, 2, 3} {
			update(set, func() { set.Spec.Replicas = n })
			reconcileOnce()
			clk.Step(time.Minute)
		}
		Expect(names()).To(HaveLen(3))
		markReady("shoot-firewall-abc-0")
		markReady("shoot-firewall-abc-2")

		update(set, func() { set.Spec.Replicas = 2 })
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0", "shoot-firewall-abc-2"), "the not-ready one went first")
		update(set, func() { set.Spec.Replicas = 1 })
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0"), "then the newest")
		Expect(status()).To(HaveField("ReadyReplicas", BeEquivalentTo(1)))
	})

	It("passes mutable template changes and labels on to its Firewalls, never the machine's parts", func() {
		start()
		reconcileOnce()
		update(set, func() {
			set.Spec.Template.Spec.RateLimits = []firewallv1alpha1.RateLimit{{Interface: "eth1", Rate: 10}}
			set.Spec.Template.Spec.AgentVersion = "v0.2.0"
			set.Spec.Template.Spec.AgentSHA256 = strings.Repeat("ab", 32)
			set.Spec.Template.Spec.SSHPublicKeys = []string{"ssh-ed25519 AAAA"}
			set.Spec.Template.Spec.UserdataContents = []firewallv1alpha1.UserdataContent{{Path: "/etc/x", Content: "x"}}
			set.Spec.Template.Metadata.Labels = map[string]string{"firewall.metal-firewall.io/shoot": "s", firewallv1alpha1.LabelTemplateHash: "abc", "extra": "label"}
			set.Spec.Template.Spec.Image = "firewall-ubuntu-3.1" // a deployment rolls a new set for this
		})
		reconcileOnce()
		Expect(firewalls()).To(HaveEach(And(
			HaveField("Spec.RateLimits", HaveLen(1)),
			HaveField("Spec.AgentVersion", "v0.2.0"),
			HaveField("Spec.AgentSHA256", strings.Repeat("ab", 32)),
			HaveField("Spec.SSHPublicKeys", ConsistOf("ssh-ed25519 AAAA")),
			HaveField("Spec.UserdataContents", HaveLen(1)),
			HaveField("Labels", HaveKeyWithValue("extra", "label")),
			HaveField("Spec.Image", "firewall-ubuntu-3.0"),
		)))
		Expect(names()).To(HaveLen(2))
	})

	It("counts ready, progressing and unhealthy Firewalls and requeues for the next to time out", func() {
		set.Spec.Replicas = 4
		start()
		reconcileOnce()
		markReady("shoot-firewall-abc-0")
		setStatus("shoot-firewall-abc-1", func(s *firewallv1alpha1.FirewallStatus) { s.Phase = firewallv1alpha1.FirewallPhaseCrashing })
		clk.Step(5 * time.Minute)
		Expect(reconcileOnce().RequeueAfter).To(Equal(healthTimeout - 5*time.Minute))
		Expect(status()).To(And(HaveField("Replicas", BeEquivalentTo(4)), HaveField("ReadyReplicas", BeEquivalentTo(1)),
			HaveField("UnhealthyReplicas", BeEquivalentTo(1)), HaveField("ProgressingReplicas", BeEquivalentTo(2))))

		clk.Step(healthTimeout)
		Expect(reconcileOnce().RequeueAfter).To(BeZero())
		Expect(status()).To(And(HaveField("ReadyReplicas", BeEquivalentTo(1)), HaveField("UnhealthyReplicas", BeEquivalentTo(3)),
			HaveField("ProgressingReplicas", BeEquivalentTo(0))))
	})

	It("adopts orphans that match its selector, but not paused ones nor another controller's", func() {
		paused := orphan("paused", selector)
		paused.Annotations = map[string]string{firewallv1alpha1.AnnotationPaused: "true"}
		foreign := orphan("foreign", selector)
		Expect(controllerutil.SetControllerReference(&firewallv1alpha1.FirewallSet{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: namespace, UID: "other-uid"}},
			foreign, managertest.Scheme())).To(Succeed())
		start(orphan("restored", selector), paused, foreign, orphan("unrelated", map[string]string{"app": "x"}))
		reconcileOnce()

		Expect(metav1.GetControllerOf(get("restored"))).To(HaveField("UID", set.UID))
		Expect(metav1.GetControllerOf(get("paused"))).To(BeNil())
		Expect(metav1.GetControllerOf(get("foreign"))).To(HaveField("UID", BeEquivalentTo("other-uid")))
		Expect(metav1.GetControllerOf(get("unrelated"))).To(BeNil())
		Expect(names()).To(ConsistOf("restored", "paused", "foreign", "unrelated", "shoot-firewall-abc-0"),
			"the adopted one counts: one more for two replicas")
	})

	It("leaves a paused set alone", func() {
		set.Annotations = map[string]string{firewallv1alpha1.AnnotationPaused: "true"}
		start()
		Expect(reconcileOnce()).To(Equal(reconcile.Result{}))
		Expect(firewalls()).To(BeEmpty())
		Expect(c.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		Expect(set.Finalizers).To(BeEmpty())
	})

	It("does not act on an invalid set", func() {
		set.Spec.Selector = nil
		start()
		Expect(reconcileOnce()).To(Equal(reconcile.Result{}))
		Expect(firewalls()).To(BeEmpty())
	})

	It("deletes its Firewalls and lets the set go only once they are gone", func() {
		start()
		reconcileOnce()
		fw := get("shoot-firewall-abc-0")
		update(fw, func() { controllerutil.AddFinalizer(fw, hold) })
		Expect(c.Delete(ctx, set)).To(Succeed())

		Expect(reconcileOnce().RequeueAfter).To(BeNumerically(">", 0))
		Expect(firewalls()).To(HaveExactElements(HaveField("DeletionTimestamp", Not(BeNil()))))
		Expect(c.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		Expect(set.Finalizers).To(ContainElement(firewallset.Finalizer))

		update(fw, func() { controllerutil.RemoveFinalizer(fw, hold) })
		reconcileOnce()
		Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(set), set))).To(BeTrue())
	})

	It("does not create Firewalls while scaled to zero", func() {
		set.Spec.Replicas = 0
		start()
		reconcileOnce()
		Expect(firewalls()).To(BeEmpty())
		Expect(status()).To(HaveField("Replicas", BeEquivalentTo(0)))
	})
})
