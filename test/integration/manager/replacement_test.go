package manager_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	firewallmanager "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/machinetest"
)

// beat plays the agent of one Firewall only.
func beat(ctx context.Context, namespace, name string) {
	fw := &firewallv1alpha1.Firewall{}
	if err := testClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, fw); err != nil || fw.Status.MachineStatus == nil {
		return
	}
	patch := client.MergeFrom(fw.DeepCopy())
	fw.Status.AgentStatus = &firewallv1alpha1.AgentStatus{LastRunAgainstSeed: &metav1.Time{Time: time.Now()}}
	Expect(client.IgnoreNotFound(testClient.Status().Patch(ctx, fw, patch))).To(Succeed())
}

func isReadyFirewall(ctx context.Context, namespace, name string) bool {
	fw := &firewallv1alpha1.Firewall{}
	if err := testClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, fw); err != nil {
		return false
	}
	return meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionReady)
}

// healthyCondition is the Healthy condition of the namespace's one set.
func healthyCondition(ctx context.Context, namespace string) *metav1.Condition {
	sets := firewallSets(ctx, namespace)
	if len(sets) != 1 {
		return nil
	}
	return meta.FindStatusCondition(sets[0].Status.Conditions, firewallv1alpha1.ConditionHealthy)
}

// eventReasons are the reasons of the events.k8s.io Events of the namespace.
func eventReasons(ctx context.Context, namespace string) []string {
	list := &eventsv1.EventList{}
	Expect(testClient.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason)
	}
	return out
}

var _ = Describe("Replacing failed firewalls", func() {
	var (
		namespace  string
		provider   *machinetest.Memory
		deployment *firewallv1alpha1.FirewallDeployment
	)
	BeforeEach(func(ctx SpecContext) {
		namespace, provider = newShootNamespace(ctx)
		deployment = newDeployment(namespace, firewallv1alpha1.StrategyRollingUpdate)
	})
	withReplacement := func(o *firewallmanager.Options) {
		// The manager's own timeouts are far away: the deployment's (the shoot's) count.
		o.CreateTimeout, o.HealthTimeout = time.Hour, time.Hour
		o.MaxReplacements, o.ReplacementBackoff = 2, time.Second
	}
	// noMoreThan fails the spec when more machines exist at once than allowed.
	noMoreThan := func(n int) func() []string {
		return func() []string {
			ids := provider.IDs()
			Expect(len(ids)).To(BeNumerically("<=", n), "never more than %d machines at once", n)
			return provider.Names()
		}
	}

	It("replaces a firewall whose agent never connects after the shoot's create timeout, and frees it only once the replacement is Ready", func(ctx SpecContext) {
		deployment.Spec.CreateTimeout = &metav1.Duration{Duration: 5 * time.Second}
		startManager(namespace, provider, withReplacement)
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(provider.Names).Should(HaveLen(1))
		original := provider.Names()[0]

		By("past the create timeout a replacement comes beside it")
		Eventually(noMoreThan(2)).WithTimeout(time.Minute).Should(HaveLen(2))
		var replacement string
		for _, n := range provider.Names() {
			if n != original {
				replacement = n
			}
		}
		Expect(healthyCondition(ctx, namespace)).To(And(Not(BeNil()), HaveField("Reason", firewallset.ReasonReplacing),
			HaveField("Message", ContainSubstring("Firewall "+original+" not Ready 5s after its creation (create timeout), its agent never reported"))))
		Eventually(func() []string { return eventReasons(ctx, namespace) }).Should(ContainElement(firewallset.ReasonReplacing))
		Consistently(provider.Names).WithTimeout(2*time.Second).Should(ContainElement(original), "the failed one stays while its replacement is not Ready")

		By("the replacement's agent reports: it turns Ready, and only then the failed one goes")
		Eventually(func() bool {
			beat(ctx, namespace, replacement)
			return isReadyFirewall(ctx, namespace, replacement)
		}).WithTimeout(time.Minute).Should(BeTrue())
		Eventually(noMoreThan(2)).Should(Equal([]string{replacement}))
		Eventually(firewallNames(ctx, namespace)).Should(Equal([]string{replacement}))
		Expect(provider.Created()).To(Equal(2))
		Eventually(func(g Gomega) {
			sets := firewallSets(ctx, namespace)
			g.Expect(sets).To(HaveLen(1))
			g.Expect(sets[0].Status.Replacements).To(BeZero(), "healthy again: the next failure may be replaced anew")
			c := meta.FindStatusCondition(sets[0].Status.Conditions, firewallv1alpha1.ConditionHealthy)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(firewallset.ReasonRecovered))
		}).Should(Succeed())
		Expect(eventReasons(ctx, namespace)).To(ContainElement(firewallset.ReasonReplaced))
	})

	It("tries at most the configured number of replacements, keeps the original meanwhile and reports that it gave up", func(ctx SpecContext) {
		deployment.Spec.CreateTimeout = &metav1.Duration{Duration: 3 * time.Second}
		startManager(namespace, provider, withReplacement)
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(provider.Names).Should(HaveLen(1))
		original := provider.Names()[0]

		Eventually(func() string {
			noMoreThan(2)()
			if c := healthyCondition(ctx, namespace); c != nil {
				return c.Reason
			}
			return ""
		}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Equal(firewallset.ReasonReplacementLimitReached))
		Expect(healthyCondition(ctx, namespace).Message).To(ContainSubstring("gave up after 2 replacements"))
		Eventually(provider.Names).Should(Equal([]string{original}), "the failed replacements go, the original stays")
		Consistently(func() int { noMoreThan(1)(); return provider.Created() }).WithTimeout(5*time.Second).Should(Equal(3), "the original and two tries, no more")
		Eventually(func() []string { return eventReasons(ctx, namespace) }).Should(And(
			HaveEach(BeElementOf(firewallset.ReasonReplacing, firewallset.ReasonReplaced, firewallset.ReasonReplacementLimitReached)),
			ContainElements(firewallset.ReasonReplacing, firewallset.ReasonReplacementLimitReached)))
		replacing := 0
		for _, r := range eventReasons(ctx, namespace) {
			if r == firewallset.ReasonReplacing {
				replacing++
			}
		}
		Expect(replacing).To(Equal(2), "an Event for each try")
	})

	It("replaces a firewall that stops reporting after the shoot's health timeout, never going below one firewall", func(ctx SpecContext) {
		deployment.Spec.HealthTimeout = &metav1.Duration{Duration: 3 * time.Second}
		startManager(namespace, provider, withReplacement, func(o *firewallmanager.Options) { o.HeartbeatTimeout = 2 * time.Second })
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(provider.Names).Should(HaveLen(1))
		original := provider.Names()[0]
		Eventually(func() bool {
			beat(ctx, namespace, original)
			return isReadyFirewall(ctx, namespace, original)
		}).Should(BeTrue())

		By("its agent stops: not Ready after the heartbeat timeout, replaced after the health timeout")
		Eventually(noMoreThan(2)).WithTimeout(time.Minute).Should(HaveLen(2))
		Expect(healthyCondition(ctx, namespace).Message).To(ContainSubstring("not Ready for 3s (health timeout)"))
		var replacement string
		for _, n := range provider.Names() {
			if n != original {
				replacement = n
			}
		}
		Consistently(provider.Names).WithTimeout(2*time.Second).Should(ContainElement(original), "it may still forward with its last rules")
		Eventually(func() []string {
			beat(ctx, namespace, replacement)
			return noMoreThan(2)()
		}).WithTimeout(time.Minute).Should(Equal([]string{replacement}))
	})
})
