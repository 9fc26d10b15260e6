package firewallextension_test

import (
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	firewallcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/firewall"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

var _ = Describe("Extension firewall waits", func() {
	It("waits for booting firewalls on workers of their own: another shoot's Extension is reconciled meanwhile, and waits once a slot is free", func(ctx SpecContext) {
		// One worker for reconciles and two for waits; a wait outlasts the spec.
		seed := startSeed("seed-wait", "", func(o *firewallcontroller.AddOptions) {
			o.Controller.MaxConcurrentReconciles = 1
			o.Config.MaxWaiting = 2
			o.Config.ReadyTimeout = 5 * time.Minute
		})
		create := func(namespace string) *extensionsv1alpha1.Extension {
			createShoot(ctx, seed, namespace)
			ex := newExtension(namespace, providerConfig)
			Expect(seed.client.Create(ctx, ex)).To(Succeed())
			return ex
		}
		waiting := func(ex *extensionsv1alpha1.Extension) func(Gomega) {
			return func(g Gomega) {
				current := &extensionsv1alpha1.Extension{}
				g.Expect(seed.client.Get(ctx, client.ObjectKeyFromObject(ex), current)).To(Succeed())
				g.Expect(current.Status.LastOperation).NotTo(BeNil())
				g.Expect(current.Status.LastOperation.State).To(Equal(gardencorev1beta1.LastOperationStateProcessing))
				g.Expect(current.Status.LastOperation.Description).To(HavePrefix("Waiting for the firewall to forward with its rules"))
			}
		}

		By("two firewalls boot and are never heard of: both reconciles wait")
		booting := []*extensionsv1alpha1.Extension{create("shoot--p--boot-0"), create("shoot--p--boot-1")}
		for _, ex := range booting {
			Eventually(waiting(ex)).Should(Succeed(), stateOf(ctx, seed, ex))
		}

		By("a third shoot's Extension is reconciled beside them: its FirewallDeployment is written, its wait finds no slot")
		third := create("shoot--p--third")
		Eventually(func() error {
			return seed.client.Get(ctx, client.ObjectKey{Namespace: third.Namespace, Name: constants.FirewallDeploymentName}, &firewallv1alpha1.FirewallDeployment{})
		}).Should(Succeed())
		Eventually(lastErrorOf(ctx, seed, third)).Should(ContainSubstring("2 other firewalls are being waited for (--firewall-max-waiting): this one is waited for once one of theirs ends"))
		for _, ex := range booting {
			waiting(ex)(Default)
			_, lastErr := lastOperationOf(ctx, seed, ex)
			Expect(lastErr).To(BeNil(), "still waiting, as they did before the third came")
		}

		By("once they forward, the third is reconciled again by itself and waits for its own")
		for _, ex := range booting {
			succeeded(ctx, seed, ex)
		}
		Eventually(waiting(third)).Should(Succeed(), stateOf(ctx, seed, third)) // with the refusal as lastError until it succeeds
		succeeded(ctx, seed, third)
		_, lastErr := lastOperationOf(ctx, seed, third)
		Expect(lastErr).To(BeNil(), "Success clears the slot's error")
	})

	It("waits until the ready timeout, however short the controller's reconciliation timeout", func(ctx SpecContext) {
		// Gardener's reconciler gives a reconcile 3 minutes unless told.
		seed := startSeed("seed-timeout", "", func(o *firewallcontroller.AddOptions) {
			o.Controller.ReconciliationTimeout = time.Second
			o.Config.ReadyTimeout = 4 * time.Second
		})
		ex := newExtension("shoot--p--timeout", providerConfig)
		createShoot(ctx, seed, ex.Namespace)
		Expect(seed.client.Create(ctx, ex)).To(Succeed())
		Eventually(lastErrorOf(ctx, seed, ex)).Should(ContainSubstring("the firewall does not forward with its rules after 4s: "), stateOf(ctx, seed, ex))
	})

	It("gives way to a new spec while it waits: a rollback is written at once, not after the old firewall's timeout", func(ctx SpecContext) {
		seed := startSeed("seed-respec", "", func(o *firewallcontroller.AddOptions) {
			o.Config.ReadyTimeout = 5 * time.Minute
		})
		ex := newExtension("shoot--p--respec", providerConfig)
		createShoot(ctx, seed, ex.Namespace)
		Expect(seed.client.Create(ctx, ex)).To(Succeed())
		Eventually(func(g Gomega) {
			op, _ := lastOperationOf(ctx, seed, ex)
			g.Expect(op).NotTo(BeNil())
			g.Expect(op.Description).To(HavePrefix("Waiting for the firewall to forward with its rules"))
		}).Should(Succeed(), stateOf(ctx, seed, ex))

		Expect(framework.UpdateProviderConfig(ctx, seed.client, ex, []byte(strings.Replace(providerConfig, "10.250.0.0/16", "10.251.0.0/24", 1)))).To(Succeed())
		Eventually(func(g Gomega) {
			d := &firewallv1alpha1.FirewallDeployment{}
			g.Expect(seed.client.Get(ctx, client.ObjectKey{Namespace: ex.Namespace, Name: constants.FirewallDeploymentName}, d)).To(Succeed())
			g.Expect(d.Spec.Template.Spec.InternalPrefixes).To(ContainElement("10.251.0.0/24"))
		}).Should(Succeed(), stateOf(ctx, seed, ex))
	})
})
