package firewallextension_test

import (
	"fmt"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// lastOperationOf returns the Extension's last operation and error as gardenlet reads them.
func lastOperationOf(ctx SpecContext, s *seedEnv, ex *extensionsv1alpha1.Extension) (*gardencorev1beta1.LastOperation, *gardencorev1beta1.LastError) {
	GinkgoHelper()
	Expect(s.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
	return ex.Status.LastOperation, ex.Status.LastError
}

// lastErrorOf returns the description of the Extension's last error, "" without one.
func lastErrorOf(ctx SpecContext, s *seedEnv, ex *extensionsv1alpha1.Extension) func() string {
	return func() string {
		if _, lastErr := lastOperationOf(ctx, s, ex); lastErr != nil {
			return lastErr.Description
		}
		return ""
	}
}

// stateOf describes, for a failure message, what gardenlet and an operator
// would look at: the Extension's operation annotation, last operation and
// error, and the FirewallDeployment's replicas.
func stateOf(ctx SpecContext, s *seedEnv, ex *extensionsv1alpha1.Extension) func() string {
	return func() string {
		current := &extensionsv1alpha1.Extension{}
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(ex), current); err != nil {
			return err.Error()
		}
		out := fmt.Sprintf("operation annotation %q, last operation %+v, last error %+v",
			current.Annotations[v1beta1constants.GardenerOperation], current.Status.LastOperation, current.Status.LastError)
		d := &firewallv1alpha1.FirewallDeployment{}
		if err := s.client.Get(ctx, client.ObjectKey{Namespace: ex.Namespace, Name: constants.FirewallDeploymentName}, d); err == nil {
			out += fmt.Sprintf(", FirewallDeployment replicas %d (generation %d, status %+v)", d.Spec.Replicas, d.Generation, d.Status)
		}
		return out
	}
}

// annotate sets gardenlet's operation annotation.
func annotate(ctx SpecContext, s *seedEnv, ex *extensionsv1alpha1.Extension, op string, mutate func(*extensionsv1alpha1.Extension)) {
	GinkgoHelper()
	Eventually(func() error {
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
			return err
		}
		if mutate != nil {
			mutate(ex)
		}
		metav1.SetMetaDataAnnotation(&ex.ObjectMeta, v1beta1constants.GardenerOperation, op)
		return s.client.Update(ctx, ex)
	}).Should(Succeed())
}

// The Extension is what gardenlet waits for before it creates the shoot's
// OperatingSystemConfigs and Workers (see docs/operations/what-waits-for-what.md): it must not
// be Succeeded before the firewall forwards with its rules.
var _ = Describe("Extension firewall readiness", func() {
	It("is not Succeeded before the agent has applied the firewall's rules, on creation and on a change of the rules", func(ctx SpecContext) {
		namespace := "shoot--p--ready"
		createShoot(ctx, seedA, namespace)
		ex := newExtension(namespace, providerConfig[:len(providerConfig)-1]+`,"createTimeout":"2m","healthTimeout":"3m"}`)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())

		By("the shoot's timeouts reach the FirewallDeployment and its set")
		Eventually(func(g Gomega) {
			d := &firewallv1alpha1.FirewallDeployment{}
			g.Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.FirewallDeploymentName}, d)).To(Succeed())
			g.Expect(d.Spec.CreateTimeout).To(Equal(&metav1.Duration{Duration: 2 * time.Minute}))
			g.Expect(d.Spec.HealthTimeout).To(Equal(&metav1.Duration{Duration: 3 * time.Minute}))
			sets := &firewallv1alpha1.FirewallSetList{}
			g.Expect(seedA.client.List(ctx, sets, client.InNamespace(namespace))).To(Succeed())
			g.Expect(sets.Items).To(HaveLen(1))
			g.Expect(sets.Items[0].Spec.FirewallTimeouts).To(Equal(d.Spec.FirewallTimeouts))
		}).Should(Succeed())

		By("the agent beats into seed and shoot, but has not applied the Firewall's spec: Ready and connected, still Processing")
		notApplied := beatWith(ctx, seedA, namespace, func(*firewallv1alpha1.Firewall) int64 { return 0 })
		Eventually(notApplied).Should(HaveLen(1))
		Eventually(func(g Gomega) {
			fw := firewalls(ctx, seedA, namespace)[0]
			g.Expect(meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionConnected)).To(BeTrue())
		}).Should(Succeed())
		Eventually(func() string {
			notApplied()
			op, _ := lastOperationOf(ctx, seedA, ex)
			if op == nil {
				return ""
			}
			return op.Description
		}).Should(ContainSubstring("rules of generation 1 not applied (agent has 0 in force)"))
		Consistently(func(g Gomega) {
			notApplied()
			op, lastErr := lastOperationOf(ctx, seedA, ex)
			g.Expect(op.State).To(Equal(gardencorev1beta1.LastOperationStateProcessing), "gardenlet keeps waiting for a Processing Extension")
			g.Expect(lastErr).To(BeNil(), "and gives up on one with an error")
		}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("the agent reports the Firewall's generation in force: Succeeded")
		Eventually(func() string {
			beatAndCountReady(ctx, seedA, namespace)()
			return lastOperation(ctx, seedA, ex)()
		}).Should(MatchRegexp(`^(Create|Reconcile) Succeeded$`))
		fw := firewalls(ctx, seedA, namespace)[0]
		Expect(fw.Status.AgentStatus.AppliedGeneration).To(Equal(fw.Generation))

		By("a change of the rules: Processing again until the agent has applied the new generation")
		annotate(ctx, seedA, ex, v1beta1constants.GardenerOperationReconcile, func(ex *extensionsv1alpha1.Extension) {
			ex.Spec.ProviderConfig.Raw = []byte(strings.Replace(providerConfig, `"10.250.0.0/16"`, `"10.250.0.0/16","10.251.0.0/16"`, 1))
		})
		oldGeneration := fw.Generation
		stale := beatWith(ctx, seedA, namespace, func(*firewallv1alpha1.Firewall) int64 { return oldGeneration })
		Eventually(func(g Gomega) {
			stale()
			g.Expect(firewalls(ctx, seedA, namespace)[0].Generation).To(BeNumerically(">", oldGeneration), "the new rules reached the Firewall")
			op, _ := lastOperationOf(ctx, seedA, ex)
			g.Expect(op.State).To(Equal(gardencorev1beta1.LastOperationStateProcessing))
			g.Expect(op.Description).To(ContainSubstring("not applied (agent has %d in force)", oldGeneration))
		}).Should(Succeed())
		Consistently(func() gardencorev1beta1.LastOperationState {
			stale()
			op, _ := lastOperationOf(ctx, seedA, ex)
			return op.State
		}).WithTimeout(3 * time.Second).WithPolling(500 * time.Millisecond).Should(Equal(gardencorev1beta1.LastOperationStateProcessing))
		Eventually(func() string {
			beatAndCountReady(ctx, seedA, namespace)()
			return lastOperation(ctx, seedA, ex)()
		}).Should(Equal("Reconcile Succeeded"))
	})

	It("reports the ready timeout with the firewall and the conditions missing when the agent never reports", func(ctx SpecContext) {
		namespace := "shoot--p--silent"
		createShoot(ctx, seedA, namespace)
		ex := newExtension(namespace, providerConfig)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		created := time.Now()

		Eventually(lastOperation(ctx, seedA, ex)).Should(MatchRegexp(`^(Create|Reconcile) Processing$`))
		Eventually(lastErrorOf(ctx, seedA, ex)).WithTimeout(time.Minute).Should(And(
			ContainSubstring("the firewall does not forward with its rules after 20s"),
			MatchRegexp(`firewall shoot--p--silent/firewall-[0-9a-f]+-0: Ready=False \(no agent heartbeat within 3m0s\), SeedConnected=False \(no agent report within 3m0s\), Connected=False`),
			ContainSubstring("no agent status")))
		Expect(time.Since(created)).To(BeNumerically(">=", readyTimeout), "not before the timeout")
		// The error stays in lastError, where gardenlet reads it, while the
		// controller's next try (after its back-off) is Processing again.
		op, _ := lastOperationOf(ctx, seedA, ex)
		Expect(op.State).To(BeElementOf(gardencorev1beta1.LastOperationStateError, gardencorev1beta1.LastOperationStateProcessing))
	})

	It("does not wait while the shoot hibernates: no node needs the firewall, and the agent cannot reach the shoot", func(ctx SpecContext) {
		namespace := "shoot--p--asleep"
		createShootWith(ctx, seedA, namespace, `{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","metadata":{"name":"s","namespace":"garden-p"},"spec":{"hibernation":{"enabled":true}}}`)
		ex := newExtension(namespace, providerConfig)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		Eventually(lastOperation(ctx, seedA, ex)).Should(MatchRegexp(`^(Create|Reconcile) Succeeded$`))
		for _, fw := range firewalls(ctx, seedA, namespace) {
			Expect(fw.Status.AgentStatus).To(BeNil(), "no agent has reported")
		}
	})

	It("gives way to a migration requested while it waits", func(ctx SpecContext) {
		namespace := "shoot--p--waiting"
		createShoot(ctx, seedA, namespace)
		ex := newExtension(namespace, providerConfig)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		Eventually(func() string {
			op, _ := lastOperationOf(ctx, seedA, ex)
			if op == nil {
				return ""
			}
			return op.Description
		}).Should(ContainSubstring("Waiting for the firewall to forward with its rules"))

		annotate(ctx, seedA, ex, v1beta1constants.GardenerOperationMigrate, nil)
		migrating := time.Now()
		Eventually(lastOperation(ctx, seedA, ex)).WithTimeout(time.Minute).Should(Equal("Migrate Succeeded"))
		Expect(time.Since(migrating)).To(BeNumerically("<", readyTimeout/2), "the wait ended at once, not at its timeout")
	})
})
