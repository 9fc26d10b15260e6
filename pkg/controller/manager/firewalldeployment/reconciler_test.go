package firewalldeployment_test

import (
	"context"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewalldeployment"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/managertest"
)

const (
	namespace        = "shoot--p--s"
	progressDeadline = 10 * time.Minute
	// hold stands in for the FirewallSet controller's finalizer: a set
	// with it lingers, being deleted, until the spec lets it go.
	hold = "test.metal-firewall.io/hold"
)

var selector = map[string]string{"firewall.metal-firewall.io/shoot": "s"}

func newDeployment(strategy firewallv1alpha1.UpdateStrategy) *firewallv1alpha1.FirewallDeployment {
	return &firewallv1alpha1.FirewallDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "shoot-firewall", Namespace: namespace},
		Spec: firewallv1alpha1.FirewallDeploymentSpec{
			Strategy: strategy,
			Replicas: 1,
			Selector: selector,
			Template: firewallv1alpha1.FirewallTemplateSpec{
				Metadata: firewallv1alpha1.TemplateMetadata{Labels: selector},
				Spec: firewallv1alpha1.FirewallSpec{
					Size: "c1-xlarge-x86", Image: "firewall-ubuntu-3.0", Partition: "local", Project: "p1",
					Networks:            []string{"internet", "tenant"},
					FirewallTrafficSpec: firewallv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.1.0/24"}},
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
		r   *firewalldeployment.Reconciler
		d   *firewallv1alpha1.FirewallDeployment
	)
	BeforeEach(func() {
		ctx = context.Background()
		clk = testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		d = newDeployment(firewallv1alpha1.StrategyRollingUpdate)
	})
	start := func() {
		GinkgoHelper()
		c = managertest.NewClient(clk, interceptor.Funcs{})
		r = &firewalldeployment.Reconciler{Client: c, Clock: clk, ProgressDeadline: progressDeadline}
		Expect(c.Create(ctx, d)).To(Succeed())
	}
	reconcileOnce := func() reconcile.Result {
		GinkgoHelper()
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(d)})
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	// sets returns the namespace's FirewallSets, oldest revision first.
	sets := func() []firewallv1alpha1.FirewallSet {
		GinkgoHelper()
		list := &firewallv1alpha1.FirewallSetList{}
		Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		slices.SortFunc(list.Items, func(a, b firewallv1alpha1.FirewallSet) int {
			return strings.Compare(a.Annotations[firewallv1alpha1.AnnotationRevision], b.Annotations[firewallv1alpha1.AnnotationRevision])
		})
		return list.Items
	}
	names := func() []string {
		var out []string
		for _, s := range sets() {
			out = append(out, s.Name)
		}
		return out
	}
	update := func(obj client.Object, mutate func()) {
		GinkgoHelper()
		Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		mutate()
		Expect(c.Update(ctx, obj)).To(Succeed())
	}
	// markReady reports the set's firewalls Ready, as the FirewallSet
	// controller does.
	markReady := func(name string) {
		GinkgoHelper()
		s := &firewallv1alpha1.FirewallSet{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s)).To(Succeed())
		patch := client.MergeFrom(s.DeepCopy())
		s.Status = firewallv1alpha1.FirewallSetStatus{ObservedGeneration: s.Generation, Replicas: s.Spec.Replicas, ReadyReplicas: s.Spec.Replicas}
		Expect(c.Status().Patch(ctx, s, patch)).To(Succeed())
	}
	progressing := func() metav1.Condition {
		GinkgoHelper()
		Expect(c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		cond := meta.FindStatusCondition(d.Status.Conditions, firewallv1alpha1.ConditionProgressing)
		Expect(cond).NotTo(BeNil())
		return *cond
	}

	It("creates the first set, named after its template hash, and guards the deployment with a finalizer", func() {
		start()
		res := reconcileOnce()
		Expect(res.RequeueAfter).To(Equal(progressDeadline), "to report a missed deadline without an event")

		all := sets()
		Expect(all).To(HaveLen(1))
		s := all[0]
		hash := s.Labels[firewallv1alpha1.LabelTemplateHash]
		Expect(hash).NotTo(BeEmpty())
		Expect(s.Name).To(Equal(d.Name + "-" + hash))
		Expect(s.Annotations).To(HaveKeyWithValue(firewallv1alpha1.AnnotationRevision, "1"))
		Expect(s.Spec.Selector).To(And(HaveKeyWithValue("firewall.metal-firewall.io/shoot", "s"), HaveKeyWithValue(firewallv1alpha1.LabelTemplateHash, hash)))
		Expect(s.Spec.Template.Metadata.Labels).To(HaveKeyWithValue(firewallv1alpha1.LabelTemplateHash, hash))
		Expect(s.Spec.Template.Spec.Image).To(Equal("firewall-ubuntu-3.0"))
		Expect(d.UID).NotTo(BeEmpty())
		Expect(metav1.GetControllerOf(&s)).To(HaveField("UID", d.UID))

		Expect(c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		Expect(d.Finalizers).To(ContainElement(firewalldeployment.Finalizer))
		Expect(d.Status.ObservedRevision).To(BeEquivalentTo(1))
		Expect(progressing()).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "SetProgressing")))

		By("settling once the set is ready")
		markReady(s.Name)
		Expect(reconcileOnce().RequeueAfter).To(BeZero())
		Expect(progressing()).To(HaveField("Reason", "RolloutComplete"))
		Expect(meta.IsStatusConditionTrue(d.Status.Conditions, firewallv1alpha1.ConditionAvailable)).To(BeTrue())
		Expect(d.Status.ReadyReplicas).To(BeEquivalentTo(1))
		Expect(names()).To(HaveLen(1))
	})

	It("passes replicas and mutable template changes to the current set instead of rolling a new one", func() {
		start()
		reconcileOnce()
		first := names()
		update(d, func() {
			d.Spec.Replicas = 3
			d.Spec.Template.Spec.RateLimits = []firewallv1alpha1.RateLimit{{Interface: "eth1", Rate: 10}}
			d.Spec.Template.Spec.AgentVersion = "v0.2.0"
		})
		reconcileOnce()
		Expect(names()).To(Equal(first))
		s := sets()[0]
		Expect(s.Spec.Replicas).To(BeEquivalentTo(3))
		Expect(s.Spec.Template.Spec.RateLimits).To(HaveLen(1))
		Expect(s.Spec.Template.Spec.AgentVersion).To(Equal("v0.2.0"))
	})

	It("rolls a new set on an immutable change and deletes the old one only when the new one is ready", func() {
		start()
		reconcileOnce()
		old := names()[0]
		markReady(old)
		reconcileOnce()

		update(d, func() { d.Spec.Template.Spec.Image = "firewall-ubuntu-3.1" })
		reconcileOnce()
		Expect(names()).To(HaveLen(2), "the new set comes first")
		newSet := sets()[1]
		Expect(newSet.Annotations).To(HaveKeyWithValue(firewallv1alpha1.AnnotationRevision, "2"))
		Expect(newSet.Spec.Template.Spec.Image).To(Equal("firewall-ubuntu-3.1"))
		Expect(sets()[0].DeletionTimestamp).To(BeNil())

		By("keeping the old set while the new one's status is stale")
		s := &firewallv1alpha1.FirewallSet{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: newSet.Name}, s)).To(Succeed())
		patch := client.MergeFrom(s.DeepCopy())
		s.Status = firewallv1alpha1.FirewallSetStatus{ObservedGeneration: s.Generation - 1, ReadyReplicas: 1}
		Expect(c.Status().Patch(ctx, s, patch)).To(Succeed())
		reconcileOnce()
		Expect(names()).To(ConsistOf(old, newSet.Name))

		markReady(newSet.Name)
		reconcileOnce()
		Expect(names()).To(Equal([]string{newSet.Name}))
		Expect(progressing()).To(HaveField("Reason", "RolloutComplete"))
		Expect(d.Status.ObservedRevision).To(BeEquivalentTo(2))
	})

	It("rolls a new set in at a longer distance and gives it the shortest once it is Ready, before the old one goes", func() {
		d.Spec.Replicas = 2
		d.Spec.Template.Spec.Distance = 5
		start()
		reconcileOnce()
		Expect(sets()[0].Spec.Distance).To(Equal(firewallv1alpha1.ShortestDistance), "the first set has no one to yield to")
		Expect(sets()[0].Spec.Template.Spec.Distance).To(BeZero(), "a template's distance is ignored")
		old := names()[0]
		markReady(old)
		reconcileOnce()

		update(d, func() { d.Spec.Template.Spec.Image = "firewall-ubuntu-3.1" })
		reconcileOnce()
		Expect(sets()).To(HaveLen(2))
		Expect(sets()[0].Spec.Distance).To(Equal(firewallv1alpha1.ShortestDistance))
		Expect(sets()[1].Spec.Distance).To(Equal(firewallv1alpha1.RollingUpdateDistance))
		newSet := sets()[1].Name
		reconcileOnce()
		Expect(sets()[1].Spec.Distance).To(Equal(firewallv1alpha1.RollingUpdateDistance), "not Ready: the distance stays")

		markReady(newSet)
		reconcileOnce()
		Expect(names()).To(Equal([]string{newSet}))
		Expect(sets()[0].Spec.Distance).To(Equal(firewallv1alpha1.ShortestDistance))
	})

	It("keeps its sets at the longest distance while provider-metal's firewall may carry the shoot, and takes the shortest once it is gone", func() {
		// firewall-controller-manager's FirewallDeployment as provider-metal's running
		// shoot has it; nil: gone. Served to the reconciler's unstructured reads.
		providerFirewall := map[string]any{"spec": map[string]any{"replicas": int64(1)}, "status": map[string]any{"readyReplicas": int64(1)}}
		reads := 0
		c = managertest.NewClient(clk, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok || u.GroupVersionKind() != constants.ProviderFirewallDeploymentGVK {
				return c.Get(ctx, key, obj, opts...)
			}
			reads++
			if providerFirewall == nil || key != (client.ObjectKey{Namespace: namespace, Name: constants.ProviderFirewallDeploymentName}) {
				return apierrors.NewNotFound(schema.GroupResource{Group: constants.ProviderFirewallDeploymentGVK.Group, Resource: "firewalldeployments"}, key.Name)
			}
			u.Object["spec"], u.Object["status"] = providerFirewall["spec"], providerFirewall["status"]
			return nil
		}})
		r = &firewalldeployment.Reconciler{Client: c, Clock: clk, ProgressDeadline: progressDeadline}
		Expect(c.Create(ctx, d)).To(Succeed())

		reconcileOnce()
		Expect(sets()[0].Spec.Distance).To(Equal(firewallv1alpha1.LongestDistance), "provider-metal's firewall announces the shortest routes")
		Expect(reads).To(Equal(1), "read once per reconcile")
		markReady(names()[0])
		Expect(reconcileOnce().RequeueAfter).To(BeNumerically(">", 0), "the deployment looks again")
		Expect(sets()[0].Spec.Distance).To(Equal(firewallv1alpha1.LongestDistance), "Ready, but provider-metal's firewall still runs")
		Expect(c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		cond := meta.FindStatusCondition(d.Status.Conditions, firewallv1alpha1.ConditionDistanceInForce)
		Expect(cond).NotTo(BeNil())
		Expect(cond.Message).To(ContainSubstring("provider-metal's firewall goes first: waiting for firewall-controller-manager's FirewallDeployment shoot--p--s/firewall: 1 replicas, 1 ready"))

		By("held at 0, its firewall still Ready: the longest distance stays")
		providerFirewall["spec"] = map[string]any{"replicas": int64(0)}
		reconcileOnce()
		Expect(sets()[0].Spec.Distance).To(Equal(firewallv1alpha1.LongestDistance))

		By("its firewall gone")
		providerFirewall["status"] = map[string]any{"readyReplicas": int64(0)}
		reconcileOnce()
		Expect(sets()[0].Spec.Distance).To(Equal(firewallv1alpha1.ShortestDistance))

		By("given back (the Extension goes): the longest again, so that the fabric never spreads a connection over both")
		providerFirewall["spec"] = map[string]any{"replicas": int64(1)}
		reconcileOnce()
		Expect(sets()[0].Spec.Distance).To(Equal(firewallv1alpha1.LongestDistance))

		By("no such deployment at all (a shoot without provider-metal's): the shortest")
		providerFirewall = nil
		reconcileOnce()
		Expect(sets()[0].Spec.Distance).To(Equal(firewallv1alpha1.ShortestDistance))
	})

	It("says once per step that a roll went on without a firewall's distance, not at every poll of the next step", func() {
		start()
		recorder := events.NewFakeRecorder(10)
		r.Recorder, r.DistanceTimeout = recorder, time.Minute
		// firewallOf gives the set a Firewall whose agent announces the
		// distance the set had when it was made, and no other.
		firewallOf := func(set string) {
			GinkgoHelper()
			s := &firewallv1alpha1.FirewallSet{}
			Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: set}, s)).To(Succeed())
			fw := &firewallv1alpha1.Firewall{ObjectMeta: metav1.ObjectMeta{Name: set + "-0", Namespace: namespace, Labels: s.Spec.Selector},
				Spec: firewallv1alpha1.FirewallSpec{Distance: s.Spec.Distance}}
			Expect(controllerutil.SetControllerReference(s, fw, c.Scheme())).To(Succeed())
			Expect(c.Create(ctx, fw)).To(Succeed())
			fw.Status.AgentStatus = &firewallv1alpha1.AgentStatus{DistanceSupported: true, Distance: ptr.To(s.Spec.Distance),
				LastRunAgainstSeed: &metav1.Time{Time: clk.Now()}}
			Expect(c.Status().Update(ctx, fw)).To(Succeed())
		}
		reconcileOnce()
		old := names()[0]
		markReady(old)
		firewallOf(old)
		reconcileOnce()

		update(d, func() { d.Spec.Template.Spec.Image = "firewall-ubuntu-3.1" })
		reconcileOnce()
		newSet := sets()[1].Name
		markReady(newSet)
		firewallOf(newSet)
		reconcileOnce()
		Expect(sets()[0].Spec.Distance).To(Equal(firewallv1alpha1.LongestDistance))
		Expect(recorder.Events).To(BeEmpty(), "waiting for the old firewall's 8")

		clk.Step(2 * time.Minute)
		reconcileOnce()
		Expect(sets()[1].Spec.Distance).To(Equal(firewallv1alpha1.ShortestDistance), "went on without the old firewall's 8")
		Expect(recorder.Events).To(Receive(ContainSubstring("the old sets take the longest distance: went on after 1m0s")))
		for range 3 {
			reconcileOnce()
		}
		Expect(names()).To(ConsistOf(old, newSet), "waiting for the new firewall's 0")
		Expect(recorder.Events).To(BeEmpty(), "the first step's timeout was said already")

		clk.Step(2 * time.Minute)
		reconcileOnce()
		Expect(names()).To(Equal([]string{newSet}))
		Expect(recorder.Events).To(Receive(ContainSubstring("the new set takes the shortest distance: went on after 1m0s")))
		reconcileOnce()
		Expect(recorder.Events).To(BeEmpty())
	})

	It("creates the new set of a Recreate at the shortest distance", func() {
		d.Spec.Strategy = firewallv1alpha1.StrategyRecreate
		start()
		reconcileOnce()
		markReady(names()[0])
		update(d, func() { d.Spec.Template.Spec.Image = "firewall-ubuntu-3.1" })
		reconcileOnce()
		Expect(names()).To(BeEmpty(), "the old set goes first")
		reconcileOnce()
		Expect(sets()).To(HaveLen(1))
		Expect(sets()[0].Spec.Distance).To(Equal(firewallv1alpha1.ShortestDistance))
	})

	It("rolls a new set when the roll annotation changes", func() {
		start()
		reconcileOnce()
		update(d, func() { d.Annotations = map[string]string{firewallv1alpha1.AnnotationRoll: "1"} })
		reconcileOnce()
		Expect(names()).To(HaveLen(2))
	})

	It("reports a rollout that misses its deadline and keeps the old set", func() {
		start()
		reconcileOnce()
		old := names()[0]
		markReady(old)
		reconcileOnce()
		update(d, func() { d.Spec.Template.Spec.Image = "firewall-ubuntu-3.1" })
		Expect(reconcileOnce().RequeueAfter).To(Equal(progressDeadline))

		clk.Step(progressDeadline / 2)
		Expect(reconcileOnce().RequeueAfter).To(Equal(progressDeadline/2), "the time left")
		clk.Step(progressDeadline)
		reconcileOnce()
		Expect(progressing()).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "ProgressDeadlineExceeded")))
		Expect(names()).To(ContainElement(old))
		Expect(sets()).To(HaveEach(HaveField("DeletionTimestamp", BeNil())))
	})

	It("recreates: deletes the old set first and creates the new one only once it is gone", func() {
		d = newDeployment(firewallv1alpha1.StrategyRecreate)
		start()
		reconcileOnce()
		old := sets()[0]
		update(&old, func() { controllerutil.AddFinalizer(&old, hold) })

		update(d, func() { d.Spec.Template.Spec.Image = "firewall-ubuntu-3.1" })
		Expect(reconcileOnce().RequeueAfter).To(BeNumerically(">", 0))
		Expect(sets()).To(HaveExactElements(And(HaveField("Name", old.Name), HaveField("DeletionTimestamp", Not(BeNil())))))
		Expect(progressing()).To(HaveField("Reason", "DeletingOldSets"))

		reconcileOnce()
		Expect(names()).To(Equal([]string{old.Name}), "no new set while the old one is being deleted")

		update(&old, func() { controllerutil.RemoveFinalizer(&old, hold) })
		reconcileOnce()
		Expect(sets()).To(HaveExactElements(HaveField("Spec.Template.Spec.Image", "firewall-ubuntu-3.1")))
	})

	It("adopts a set without an owner that matches its selector instead of creating a twin", func() {
		start()
		reconcileOnce()
		s := sets()[0]
		update(&s, func() { s.OwnerReferences = nil }) // as restored after a migration
		reconcileOnce()
		Expect(names()).To(Equal([]string{s.Name}))
		Expect(c.Get(ctx, client.ObjectKeyFromObject(&s), &s)).To(Succeed())
		Expect(metav1.GetControllerOf(&s)).To(HaveField("UID", d.UID))
	})

	It("removes the reconcile annotation it was asked with", func() {
		metav1.SetMetaDataAnnotation(&d.ObjectMeta, firewallv1alpha1.AnnotationReconcile, "true")
		start()
		reconcileOnce()
		Expect(c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		Expect(d.Annotations).NotTo(HaveKey(firewallv1alpha1.AnnotationReconcile))
		Expect(sets()).To(HaveLen(1), "and reconciled")
	})

	It("leaves a paused deployment alone", func() {
		d.Annotations = map[string]string{firewallv1alpha1.AnnotationPaused: "true"}
		start()
		Expect(reconcileOnce()).To(Equal(reconcile.Result{}))
		Expect(sets()).To(BeEmpty())
		Expect(c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		Expect(d.Finalizers).To(BeEmpty())
		Expect(d.Status.Conditions).To(BeEmpty())
	})

	It("keeps the finalizer of a paused deployment being deleted, and its sets", func() {
		start()
		reconcileOnce()
		update(d, func() { d.Annotations = map[string]string{firewallv1alpha1.AnnotationPaused: "true"} })
		Expect(c.Delete(ctx, d)).To(Succeed())
		reconcileOnce()
		Expect(c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		Expect(d.Finalizers).To(ContainElement(firewalldeployment.Finalizer))
		Expect(sets()).To(HaveExactElements(HaveField("DeletionTimestamp", BeNil())))
	})

	It("deletes its sets and lets the deployment go only once they are gone", func() {
		start()
		reconcileOnce()
		s := sets()[0]
		update(&s, func() { controllerutil.AddFinalizer(&s, hold) })
		Expect(c.Delete(ctx, d)).To(Succeed())

		Expect(reconcileOnce().RequeueAfter).To(BeNumerically(">", 0))
		Expect(sets()).To(HaveExactElements(HaveField("DeletionTimestamp", Not(BeNil()))))
		Expect(c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		Expect(d.Finalizers).To(ContainElement(firewalldeployment.Finalizer))

		update(&s, func() { controllerutil.RemoveFinalizer(&s, hold) })
		reconcileOnce()
		Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(d), d))).To(BeTrue())
	})

	It("refuses an invalid spec with the field, creating nothing", func() {
		d.Spec.Replicas = -1
		start()
		Expect(reconcileOnce()).To(Equal(reconcile.Result{}))
		Expect(sets()).To(BeEmpty())
		Expect(progressing()).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "InvalidSpec"),
			HaveField("Message", ContainSubstring("spec.replicas"))))
		Expect(d.Finalizers).To(BeEmpty())
	})
})
