package firewallset_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/managertest"
)

var _ = Describe("Replacing failed Firewalls", func() {
	const (
		createTimeout = 5 * time.Minute
		backoffBase   = time.Minute
	)
	var (
		ctx      context.Context
		clk      *testclock.FakeClock
		c        client.Client
		r        *firewallset.Reconciler
		recorder *events.FakeRecorder
		set      *firewallv1alpha1.FirewallSet
	)
	BeforeEach(func() {
		ctx = context.Background()
		clk = testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		set = newSet()
		set.Spec.Replicas = 1
		// The set's own create timeout wins over the manager's.
		set.Spec.CreateTimeout = &metav1.Duration{Duration: createTimeout}
		recorder = events.NewFakeRecorder(100)
		c = managertest.NewClient(clk, interceptor.Funcs{})
		r = &firewallset.Reconciler{Client: c, Clock: clk, CreateTimeout: time.Hour, HealthTimeout: healthTimeout,
			MaxReplacements: 2, ReplacementBackoff: backoffBase, Recorder: recorder}
		Expect(c.Create(ctx, set)).To(Succeed())
	})
	reconcileOnce := func() reconcile.Result {
		GinkgoHelper()
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(set)})
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	names := func() []string {
		GinkgoHelper()
		list := &firewallv1alpha1.FirewallList{}
		Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		var out []string
		for _, fw := range list.Items {
			out = append(out, fw.Name)
		}
		return out
	}
	setStatus := func(name string, mutate func(*firewallv1alpha1.FirewallStatus)) {
		GinkgoHelper()
		fw := &firewallv1alpha1.Firewall{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, fw)).To(Succeed())
		patch := client.MergeFrom(fw.DeepCopy())
		mutate(&fw.Status)
		Expect(c.Status().Patch(ctx, fw, patch)).To(Succeed())
	}
	// ready sets the Ready condition as the firewall controller does, at the
	// fake clock's time, with the agent's report.
	ready := func(name string, ok bool) {
		GinkgoHelper()
		setStatus(name, func(s *firewallv1alpha1.FirewallStatus) {
			status := metav1.ConditionFalse
			if ok {
				status = metav1.ConditionTrue
			}
			meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: firewallv1alpha1.ConditionReady, Status: status, Reason: "Ready",
				Message: "no agent heartbeat within 3m", LastTransitionTime: metav1.NewTime(clk.Now())})
			s.AgentStatus = &firewallv1alpha1.AgentStatus{LastRunAgainstSeed: &metav1.Time{Time: clk.Now()}}
		})
	}
	status := func() firewallv1alpha1.FirewallSetStatus {
		GinkgoHelper()
		Expect(c.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		return set.Status
	}
	healthy := func() *metav1.Condition {
		return meta.FindStatusCondition(status().Conditions, firewallv1alpha1.ConditionHealthy)
	}

	It("replaces a Firewall whose agent never reports after the set's create timeout, backs off, and stops at the cap", func() {
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0"))
		Expect(reconcileOnce().RequeueAfter).To(Equal(createTimeout), "the set's create timeout, not the manager's hour")

		clk.Step(createTimeout - time.Second)
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0"), "not before the timeout")

		By("past the create timeout: a replacement beside the failed Firewall, an Event and the condition")
		clk.Step(time.Second)
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0", "shoot-firewall-abc-1"), "the failed one stays until its replacement is Ready")
		Expect(status().Replacements).To(BeEquivalentTo(1))
		Expect(healthy()).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", firewallset.ReasonReplacing),
			HaveField("Message", ContainSubstring("Firewall shoot-firewall-abc-0 not Ready 5m0s after its creation (create timeout)"))))
		Expect(recorder.Events).To(Receive(And(ContainSubstring("Warning Replacing"), ContainSubstring("(1 of 2)"))))
		Expect(status().UnhealthyReplicas).To(BeEquivalentTo(1))

		By("the replacement fails as well: it goes, the original stays, and the next try waits the back-off")
		clk.Step(createTimeout)
		Expect(reconcileOnce().RequeueAfter).To(Equal(backoffBase))
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0"))
		Expect(recorder.Events).To(Receive(And(ContainSubstring("Normal Replaced"), ContainSubstring("shoot-firewall-abc-1"))))
		Expect(healthy()).To(HaveField("Reason", firewallset.ReasonBackingOff))

		clk.Step(backoffBase)
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0", "shoot-firewall-abc-1"), "the second try, under the lowest free name")
		Expect(status().Replacements).To(BeEquivalentTo(2))
		Expect(recorder.Events).To(Receive(ContainSubstring("(2 of 2)")))

		By("the cap is reached: no third try, reported once")
		clk.Step(createTimeout + time.Hour)
		reconcileOnce()
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0"))
		Expect(healthy()).To(And(HaveField("Reason", firewallset.ReasonReplacementLimitReached), HaveField("Message", ContainSubstring("gave up after 2 replacements"))))
		Expect(recorder.Events).To(Receive(ContainSubstring("Normal Replaced")))
		Expect(recorder.Events).To(Receive(ContainSubstring("Warning ReplacementLimitReached")))
		Expect(recorder.Events).NotTo(Receive(), "the limit is reported once, not on every pass")

		By("the original's agent reports at last: the set is healthy again and may replace anew")
		ready("shoot-firewall-abc-0", true)
		reconcileOnce()
		Expect(status().Replacements).To(BeZero())
		Expect(healthy()).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", firewallset.ReasonRecovered)))
	})

	It("replaces a Firewall that stays not Ready past the health timeout and deletes it only once the replacement is Ready", func() {
		reconcileOnce()
		ready("shoot-firewall-abc-0", true)
		reconcileOnce()

		clk.Step(time.Hour)
		ready("shoot-firewall-abc-0", false)
		clk.Step(healthTimeout - time.Second)
		Expect(reconcileOnce().RequeueAfter).To(Equal(time.Second), "the health timeout runs from when it stopped being Ready, not from its creation")
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0"))

		clk.Step(time.Second)
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0", "shoot-firewall-abc-1"))
		Expect(healthy().Message).To(ContainSubstring("not Ready for 20m0s (health timeout)"))
		reconcileOnce()
		Expect(names()).To(HaveLen(2), "one replacement, not one per pass")

		ready("shoot-firewall-abc-1", true)
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-1"))
		Expect(status()).To(And(HaveField("ReadyReplicas", BeEquivalentTo(1)), HaveField("Replicas", BeEquivalentTo(1)), HaveField("Replacements", BeZero())))
	})

	It("gives a Firewall whose first report comes later than a short health timeout, not yet Ready, its create timeout", func() {
		set.Spec.HealthTimeout = &metav1.Duration{Duration: 2 * time.Second}
		Expect(c.Update(ctx, set)).To(Succeed())
		reconcileOnce()
		setStatus("shoot-firewall-abc-0", func(s *firewallv1alpha1.FirewallStatus) {
			meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: firewallv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
				Reason: firewallv1alpha1.ReasonBooting, Message: "machine not provisioned yet", LastTransitionTime: metav1.NewTime(clk.Now())})
		})
		clk.Step(time.Minute)
		By("the agent reports for the first time; the set sees the heartbeat before the Ready condition it leads to")
		setStatus("shoot-firewall-abc-0", func(s *firewallv1alpha1.FirewallStatus) {
			s.AgentStatus = &firewallv1alpha1.AgentStatus{LastRunAgainstSeed: &metav1.Time{Time: clk.Now()}}
		})
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0"), "it never was Ready: the health timeout cannot have run out")
		Expect(status().Replacements).To(BeZero())

		clk.Step(createTimeout - time.Minute)
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0", "shoot-firewall-abc-1"), "not Ready when its create timeout ran out")
		Expect(healthy().Message).To(ContainSubstring("not Ready 5m0s after its creation (create timeout), never Ready"))
	})

	It("replaces nothing while replacement is off, and says so", func() {
		r.MaxReplacements = 0
		reconcileOnce()
		clk.Step(createTimeout)
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0"))
		Expect(healthy()).To(HaveField("Reason", firewallset.ReasonReplacementDisabled))
		Expect(status().UnhealthyReplicas).To(BeEquivalentTo(1))
	})

	It("leaves a paused Firewall alone", func() {
		reconcileOnce()
		fw := &firewallv1alpha1.Firewall{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "shoot-firewall-abc-0"}, fw)).To(Succeed())
		fw.Annotations = map[string]string{firewallv1alpha1.AnnotationPaused: "true"}
		Expect(c.Update(ctx, fw)).To(Succeed())
		clk.Step(time.Hour)
		reconcileOnce()
		Expect(names()).To(ConsistOf("shoot-firewall-abc-0"))
		Expect(recorder.Events).NotTo(Receive())
	})
})
