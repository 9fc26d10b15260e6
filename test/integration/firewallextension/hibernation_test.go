package firewallextension_test

import (
	"fmt"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// hibernate sets the Cluster's spec.hibernation.enabled, as gardenlet does
// before it reconciles the Extension to hibernate or to wake the shoot up,
// and then asks for that reconcile; it returns a wait for its end.
func hibernate(ctx SpecContext, s *seedEnv, ex *extensionsv1alpha1.Extension, enabled bool) func() string {
	GinkgoHelper()
	setShoot(ctx, s, ex.Namespace, fmt.Sprintf(`{"spec":{"hibernation":{"enabled":%t}}}`, enabled))
	return trigger(ctx, s, ex)
}

// setShoot replaces the Cluster's Shoot by one with the given spec.
func setShoot(ctx SpecContext, s *seedEnv, namespace, shoot string) {
	GinkgoHelper()
	cluster := &extensionsv1alpha1.Cluster{}
	Expect(s.client.Get(ctx, client.ObjectKey{Name: namespace}, cluster)).To(Succeed())
	cluster.Spec.Shoot.Raw = []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","metadata":{"name":"s","namespace":"garden-p"},` + shoot[1:])
	Expect(s.client.Update(ctx, cluster)).To(Succeed())
}

// trigger makes gardenlet's reconcile happen again (the operation annotation
// stays on in these specs, so an update alone passes the predicates) and
// returns "<type> <state>" of the last operation, "" until one has begun
// after the trigger.
func trigger(ctx SpecContext, s *seedEnv, ex *extensionsv1alpha1.Extension) func() string {
	GinkgoHelper()
	Expect(s.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
	var before time.Time
	if ex.Status.LastOperation != nil {
		before = ex.Status.LastOperation.LastUpdateTime.Time
	}
	// The last operation's time has seconds.
	time.Sleep(time.Until(before.Add(1100 * time.Millisecond)))
	annotate(ctx, s, ex, v1beta1constants.GardenerOperationReconcile, func(ex *extensionsv1alpha1.Extension) {
		metav1.SetMetaDataAnnotation(&ex.ObjectMeta, "test/trigger", time.Now().String())
	})
	return func() string {
		op, _ := lastOperationOf(ctx, s, ex)
		if op == nil || !op.LastUpdateTime.After(before) {
			return ""
		}
		return fmt.Sprintf("%s %s", op.Type, op.State)
	}
}

func deploymentOf(ctx SpecContext, s *seedEnv, namespace string) *firewallv1alpha1.FirewallDeployment {
	GinkgoHelper()
	d := &firewallv1alpha1.FirewallDeployment{}
	Expect(s.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.FirewallDeploymentName}, d)).To(Succeed())
	return d
}

// succeeded brings the Extension to Succeeded, playing the agent.
func succeeded(ctx SpecContext, s *seedEnv, ex *extensionsv1alpha1.Extension) {
	GinkgoHelper()
	Eventually(func() string {
		beatAndCountReady(ctx, s, ex.Namespace)()
		return lastOperation(ctx, s, ex)()
	}).WithTimeout(time.Minute).Should(MatchRegexp(`^(Create|Reconcile) Succeeded$`))
}

var _ = Describe("Extension firewall hibernation", func() {
	It("releases the firewall while the shoot hibernates (default) and is Succeeded on waking only once a new one forwards with its rules", func(ctx SpecContext) {
		namespace := "shoot--p--release"
		createShoot(ctx, seedA, namespace)
		ex := newExtension(namespace, providerConfig)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		succeeded(ctx, seedA, ex)
		old := firewalls(ctx, seedA, namespace)[0]
		oldMachine := old.Status.MachineStatus.MachineID
		agentBinding := client.ObjectKey{Name: firewallv1alpha1.AgentUserName(namespace, old.Name)}
		Expect(seedA.client.Get(ctx, agentBinding, &rbacv1.ClusterRoleBinding{})).To(Succeed(), "the agent's seed RBAC exists while it runs")

		By("hibernating: no replicas, the machine released, the firewall's identity and credentials gone")
		Eventually(hibernate(ctx, seedA, ex, true)).WithTimeout(time.Minute).Should(Equal("Reconcile Succeeded"), stateOf(ctx, seedA, ex))
		Expect(deploymentOf(ctx, seedA, namespace).Spec.Replicas).To(BeZero())
		Eventually(func() []firewallv1alpha1.Firewall { return firewalls(ctx, seedA, namespace) }).Should(BeEmpty())
		Expect(provider.IDs()).NotTo(ContainElement(oldMachine), "the machine went back to the partition")
		Expect(seedA.client.Get(ctx, agentBinding, &rbacv1.ClusterRoleBinding{})).To(Satisfy(apierrors.IsNotFound), "the agent's seed RBAC is gone")
		Expect(bootServiceAccounts(ctx, seedA, namespace)).To(BeEmpty())
		Consistently(func() []firewallv1alpha1.Firewall { return firewalls(ctx, seedA, namespace) }).
			WithTimeout(3*time.Second).Should(BeEmpty(), "no firewall comes back while the shoot sleeps")

		By("waking up: a new firewall; the Extension stays Processing until its agent has applied its rules")
		woke := hibernate(ctx, seedA, ex, false)
		Eventually(woke).Should(Equal("Reconcile Processing"))
		notApplied := beatWith(ctx, seedA, namespace, func(*firewallv1alpha1.Firewall) int64 { return 0 })
		Eventually(notApplied).Should(HaveLen(1), "the new firewall is Ready, its rules not yet in force")
		woken := firewalls(ctx, seedA, namespace)[0]
		Expect(woken.UID).NotTo(Equal(old.UID), "a new Firewall object (its name is the set's first again)")
		Expect(woken.Status.MachineStatus.MachineID).NotTo(Equal(oldMachine))
		Consistently(func(g Gomega) {
			notApplied()
			op, lastErr := lastOperationOf(ctx, seedA, ex)
			g.Expect(op.State).To(Equal(gardencorev1beta1.LastOperationStateProcessing), "gardenlet does not start the nodes yet")
			g.Expect(lastErr).To(BeNil())
		}).WithTimeout(4 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(deploymentOf(ctx, seedA, namespace).Spec.Replicas).To(Equal(int32(1)))
		Eventually(func() string {
			beatAndCountReady(ctx, seedA, namespace)()
			return lastOperation(ctx, seedA, ex)()
		}).Should(Equal("Reconcile Succeeded"))
	})

	It("keeps the firewall and its machine through hibernation with hibernation: keep", func(ctx SpecContext) {
		namespace := "shoot--p--keep"
		createShoot(ctx, seedA, namespace)
		ex := newExtension(namespace, providerConfig[:len(providerConfig)-1]+`,"hibernation":"keep"}`)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		succeeded(ctx, seedA, ex)
		kept := firewalls(ctx, seedA, namespace)[0]
		createdBefore := provider.CreatedIn(namespace)

		Eventually(hibernate(ctx, seedA, ex, true)).WithTimeout(time.Minute).Should(Equal("Reconcile Succeeded"), stateOf(ctx, seedA, ex))
		Expect(deploymentOf(ctx, seedA, namespace).Spec.Replicas).To(Equal(int32(1)))
		Consistently(func(g Gomega) {
			fws := firewalls(ctx, seedA, namespace)
			g.Expect(fws).To(HaveLen(1))
			g.Expect(fws[0].UID).To(Equal(kept.UID))
			g.Expect(fws[0].DeletionTimestamp).To(BeNil())
		}).WithTimeout(3 * time.Second).Should(Succeed())
		Expect(provider.IDs()).To(ContainElement(kept.Status.MachineStatus.MachineID))

		woke := hibernate(ctx, seedA, ex, false)
		Eventually(func() string {
			beatAndCountReady(ctx, seedA, namespace)()
			return woke()
		}).Should(Equal("Reconcile Succeeded"))
		Expect(firewalls(ctx, seedA, namespace)[0].UID).To(Equal(kept.UID), "the same firewall forwards on")
		Expect(provider.CreatedIn(namespace)).To(Equal(createdBefore), "no new machine")
	})
})
