package firewallextension_test

import (
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

var _ = Describe("Extension firewall replicas", func() {
	It("runs two firewalls with their own machines and identities, is Succeeded only once both forward, and hibernates them both", func(ctx SpecContext) {
		namespace := "shoot--p--replicas"
		createShoot(ctx, seedA, namespace)
		ex := newExtension(namespace, providerConfig[:len(providerConfig)-1]+`,"replicas":2}`)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())

		withMachines := func() []firewallv1alpha1.Firewall {
			var out []firewallv1alpha1.Firewall
			for _, fw := range firewalls(ctx, seedA, namespace) {
				if fw.Status.MachineStatus != nil {
					out = append(out, fw)
				}
			}
			return out
		}
		Eventually(withMachines).WithTimeout(time.Minute).Should(HaveLen(2))
		Expect(deploymentOf(ctx, seedA, namespace).Spec.Replicas).To(Equal(int32(2)))
		fws := withMachines()
		Expect(fws[0].Name).NotTo(Equal(fws[1].Name))
		Expect(fws[0].Status.MachineStatus.MachineID).NotTo(Equal(fws[1].Status.MachineStatus.MachineID))
		sas := bootServiceAccounts(ctx, seedA, namespace)
		Expect(sas).To(HaveLen(2), "one boot identity per firewall, before their agents connect")
		Expect(sas[0].Name).NotTo(Equal(sas[1].Name))

		By("one firewall forwarding with its rules is not enough")
		firstOnly := beatWith(ctx, seedA, namespace, func(fw *firewallv1alpha1.Firewall) int64 {
			if fw.Name == fws[0].Name {
				return fw.Generation
			}
			return 0
		})
		Eventually(firstOnly).Should(HaveLen(2), "both Ready, one with its rules in force")
		Consistently(func(g Gomega) {
			firstOnly()
			op, _ := lastOperationOf(ctx, seedA, ex)
			g.Expect(op).NotTo(BeNil())
			g.Expect(op.State).NotTo(Equal(gardencorev1beta1.LastOperationStateSucceeded))
		}).WithTimeout(4 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		succeeded(ctx, seedA, ex)
		var distances []int32
		for _, fw := range firewalls(ctx, seedA, namespace) {
			distances = append(distances, fw.Spec.Distance)
		}
		Expect(distances).To(ConsistOf(int32(0), int32(1)), "one firewall attracts the traffic, the other takes over")

		By("hibernating releases both, waking up brings two new ones")
		Eventually(hibernate(ctx, seedA, ex, true)).WithTimeout(time.Minute).Should(Equal("Reconcile Succeeded"), stateOf(ctx, seedA, ex))
		Expect(deploymentOf(ctx, seedA, namespace).Spec.Replicas).To(BeZero())
		Eventually(func() []firewallv1alpha1.Firewall { return firewalls(ctx, seedA, namespace) }).Should(BeEmpty())
		Expect(bootServiceAccounts(ctx, seedA, namespace)).To(BeEmpty())

		woke := hibernate(ctx, seedA, ex, false)
		Eventually(func() string {
			beatAndCountReady(ctx, seedA, namespace)()
			return woke()
		}).WithTimeout(time.Minute).Should(Equal("Reconcile Succeeded"))
		Expect(deploymentOf(ctx, seedA, namespace).Spec.Replicas).To(Equal(int32(2)))
		Expect(beatAndCountReady(ctx, seedA, namespace)()).To(HaveLen(2))
		for _, fw := range firewalls(ctx, seedA, namespace) {
			Expect(fw.UID).NotTo(BeElementOf(fws[0].UID, fws[1].UID), "new firewalls")
		}
	})
})
