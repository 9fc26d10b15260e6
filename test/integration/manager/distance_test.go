package manager_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/machinetest"
)

// agents play the agents of a namespace's firewalls that announce their
// distance, as the agent's heartbeat reports it: each announces its spec's
// distance, unless held, then it keeps announcing the one it had.
type agents struct {
	mu        sync.Mutex
	namespace string
	held      map[string]bool
	announced map[string]*int32
}

func newAgents(namespace string) *agents {
	return &agents{namespace: namespace, held: map[string]bool{}, announced: map[string]*int32{}}
}

func (a *agents) hold(name string, held bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.held[name] = held
}

// beat writes each agent's heartbeat once. Errors after the spec ended (its
// context cancelled while a request was in flight) are not the spec's.
func (a *agents) beat(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	list := &firewallv1alpha1.FirewallList{}
	if err := testClient.List(ctx, list, client.InNamespace(a.namespace)); err != nil {
		Expect(ctx.Err()).To(HaveOccurred(), "listing firewalls: %v", err)
		return
	}
	for _, fw := range list.Items {
		if fw.Status.MachineStatus == nil || fw.DeletionTimestamp != nil {
			continue
		}
		if !a.held[fw.Name] {
			d := fw.Spec.Distance
			a.announced[fw.Name] = &d
		}
		patch := client.MergeFrom(fw.DeepCopy())
		fw.Status.AgentStatus = &firewallv1alpha1.AgentStatus{Version: fw.Spec.AgentVersion, LastRunAgainstSeed: &metav1.Time{Time: time.Now()},
			DistanceSupported: true, Distance: a.announced[fw.Name]}
		if err := client.IgnoreNotFound(testClient.Status().Patch(ctx, &fw, patch)); err != nil {
			Expect(ctx.Err()).To(HaveOccurred(), "patching %s: %v", fw.Name, err)
			return
		}
	}
}

// run beats every 200 ms until the spec ends.
func (a *agents) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for {
			a.beat(ctx)
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	DeferCleanup(func() { cancel(); <-done })
}

var _ = Describe("Rolling update by distance", func() {
	var (
		namespace  string
		provider   *machinetest.Memory
		deployment *firewallv1alpha1.FirewallDeployment
		fwAgents   *agents
	)
	BeforeEach(func(ctx SpecContext) {
		namespace, provider = newShootNamespace(ctx)
		deployment = newDeployment(namespace, firewallv1alpha1.StrategyRollingUpdate)
		fwAgents = newAgents(namespace)
	})

	// bySet is the spec distances of the namespace's live Firewalls by set.
	bySet := func(ctx context.Context) map[string][]int32 {
		out := map[string][]int32{}
		for _, fw := range firewalls(ctx, namespace) {
			if fw.DeletionTimestamp == nil {
				set := metav1.GetControllerOf(&fw).Name
				out[set] = append(out[set], fw.Spec.Distance)
			}
		}
		return out
	}
	namesOf := func(ctx context.Context, set string) []string {
		var out []string
		for _, fw := range firewalls(ctx, namespace) {
			if metav1.GetControllerOf(&fw).Name == set {
				out = append(out, fw.Name)
			}
		}
		return out
	}
	condition := func(ctx context.Context) func() *metav1.Condition {
		return func() *metav1.Condition {
			d := &firewallv1alpha1.FirewallDeployment{}
			Expect(testClient.Get(ctx, client.ObjectKeyFromObject(deployment), d)).To(Succeed())
			return meta.FindStatusCondition(d.Status.Conditions, firewallv1alpha1.ConditionDistanceInForce)
		}
	}

	It("moves traffic once: the old set takes the longest distance, the new one the shortest once that is in force, and the old one goes last", func(ctx SpecContext) {
		deployment.Spec.Replicas = 2
		startManager(namespace, provider)
		fwAgents.run(ctx)
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(func() []string { return readyNames(ctx, namespace) }).WithTimeout(time.Minute).Should(HaveLen(2))
		Eventually(func() map[string][]int32 { return bySet(ctx) }).Should(HaveLen(1))
		oldSet := setNames(ctx, namespace)()[0]
		Eventually(func() []int32 { return bySet(ctx)[oldSet] }).Should(ConsistOf(int32(0), int32(1)), "base and +1")
		for _, name := range namesOf(ctx, oldSet) {
			fwAgents.hold(name, true)
		}

		By("a new set rolls in at 3 and 4, behind the old one")
		rollImage(ctx, deployment)
		var newSet string
		Eventually(func(g Gomega) {
			for s := range bySet(ctx) {
				if s != oldSet {
					newSet = s
				}
			}
			g.Expect(newSet).NotTo(BeEmpty())
			g.Expect(bySet(ctx)[newSet]).To(ConsistOf(int32(3), int32(4)))
		}).WithTimeout(time.Minute).Should(Succeed())

		By("once it is Ready, the old set goes to 8; while its agents do not announce that, the new set stays at 3 and the old one stays")
		Eventually(func() []int32 { return bySet(ctx)[oldSet] }).WithTimeout(time.Minute).Should(ConsistOf(int32(8), int32(8)))
		Eventually(condition(ctx)).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "Waiting"),
			HaveField("Message", ContainSubstring("the old sets take the longest distance: waiting for "))))
		Consistently(func() map[string][]int32 { return bySet(ctx) }).WithTimeout(3 * time.Second).Should(And(
			HaveKeyWithValue(oldSet, ConsistOf(int32(8), int32(8))), HaveKeyWithValue(newSet, ConsistOf(int32(3), int32(4)))))
		Expect(condition(ctx)()).To(HaveField("Message", ContainSubstring("announces 0 (wants 8)")))

		By("the old agents announce 8: the new set takes 0 and 1; while its agents do not announce that, the old set stays")
		for _, name := range namesOf(ctx, newSet) {
			fwAgents.hold(name, true)
		}
		for _, name := range namesOf(ctx, oldSet) {
			fwAgents.hold(name, false)
		}
		Eventually(func() []int32 { return bySet(ctx)[newSet] }).WithTimeout(time.Minute).Should(ConsistOf(int32(0), int32(1)))
		Consistently(func() []int32 { return bySet(ctx)[oldSet] }).WithTimeout(3 * time.Second).Should(ConsistOf(int32(8), int32(8)))
		Expect(condition(ctx)()).To(And(HaveField("Reason", "Waiting"),
			HaveField("Message", ContainSubstring("the new set takes the shortest distance: waiting for "))))

		By("the new agents announce it: only now do the old firewalls go")
		for _, name := range namesOf(ctx, newSet) {
			fwAgents.hold(name, false)
		}
		Eventually(setNames(ctx, namespace)).WithTimeout(time.Minute).Should(ConsistOf(newSet))
		Eventually(condition(ctx)).Should(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "InForce")))
		Eventually(provider.IDs).Should(HaveLen(2))
	})

	It("holds the roll for a firewall that never announces its distance, says so, and goes on after distanceTimeout", func(ctx SpecContext) {
		deployment.Spec.DistanceTimeout = &metav1.Duration{Duration: 5 * time.Second}
		startManager(namespace, provider)
		fwAgents.run(ctx)
		Expect(testClient.Create(ctx, deployment)).To(Succeed())
		Eventually(func() []string { return readyNames(ctx, namespace) }).WithTimeout(time.Minute).Should(HaveLen(1))
		oldSet := setNames(ctx, namespace)()[0]
		silent := namesOf(ctx, oldSet)[0]
		fwAgents.hold(silent, true)

		rollImage(ctx, deployment)
		Eventually(condition(ctx)).WithTimeout(time.Minute).Should(And(HaveField("Reason", "Waiting"),
			HaveField("Message", ContainSubstring(silent+" announces 0 (wants 8)"))))
		Expect(setNames(ctx, namespace)()).To(ContainElement(oldSet))
		Eventually(setNames(ctx, namespace)).WithTimeout(time.Minute).ShouldNot(ContainElement(oldSet))
		Expect(condition(ctx)()).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "DistanceTimeout"),
			HaveField("Message", ContainSubstring("went on after 5s without "+silent))))
	})
})

// readyNames are the namespace's Ready Firewalls.
func readyNames(ctx context.Context, namespace string) []string {
	var ready []string
	for _, fw := range firewalls(ctx, namespace) {
		if meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionReady) {
			ready = append(ready, fw.Name)
		}
	}
	return ready
}
