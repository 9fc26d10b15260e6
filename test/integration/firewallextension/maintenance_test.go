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
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// maintenanceShoot is a Shoot whose maintenance window begins `from` from now
// and lasts an hour.
func maintenanceShoot(from time.Duration) string {
	begin := time.Now().UTC().Add(from)
	return fmt.Sprintf(`{"spec":{"maintenance":{"timeWindow":{"begin":"%s","end":"%s"}}}}`,
		begin.Format("150405")+"+0000", begin.Add(time.Hour).Format("150405")+"+0000")
}

// eventReasons are the reasons of the Events about the object, oldest first.
func eventReasons(ctx SpecContext, s *seedEnv, namespace, kind, name string) []string {
	GinkgoHelper()
	list := &eventsv1.EventList{}
	Expect(s.client.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name {
			reasons = append(reasons, e.Reason+": "+e.Note)
		}
	}
	return reasons
}

func updatePending(ctx SpecContext, s *seedEnv, ex *extensionsv1alpha1.Extension) *gardencorev1beta1.Condition {
	GinkgoHelper()
	Expect(s.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
	for _, c := range ex.Status.Conditions {
		if c.Type == constants.ConditionFirewallUpdatePending {
			return &c
		}
	}
	return nil
}

// reconciledWith changes the providerConfig (pairs of old and new text) and
// returns a wait for the reconcile, playing the agent.
func reconciledWith(ctx SpecContext, s *seedEnv, ex *extensionsv1alpha1.Extension, replace ...string) func() string {
	GinkgoHelper()
	annotate(ctx, s, ex, v1beta1constants.GardenerOperationReconcile, func(ex *extensionsv1alpha1.Extension) {
		raw := string(ex.Spec.ProviderConfig.Raw)
		for i := 0; i < len(replace); i += 2 {
			Expect(raw).To(ContainSubstring(replace[i]))
			raw = strings.Replace(raw, replace[i], replace[i+1], 1)
		}
		ex.Spec.ProviderConfig.Raw = []byte(raw)
	})
	generation := ex.Generation
	return func() string {
		beatAndCountReady(ctx, s, ex.Namespace)()
		op := lastOperation(ctx, s, ex)()
		if ex.Status.ObservedGeneration < generation {
			return ""
		}
		return op
	}
}

var _ = Describe("Extension firewall maintenance", func() {
	It("holds image and agent updates back until the maintenance window, never rules, and rolls once in it", func(ctx SpecContext) {
		namespace := "shoot--p--maintain"
		createShootWith(ctx, seedA, namespace, `{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","metadata":{"name":"s","namespace":"garden-p"},`+maintenanceShoot(2 * time.Hour)[1:])
		ex := newExtension(namespace, providerConfig)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		succeeded(ctx, seedA, ex)
		Expect(deploymentOf(ctx, seedA, namespace).Status.ObservedRevision).To(Equal(int64(1)))

		By("outside the window: a new image and agent version wait, a new rule is in force")
		Eventually(reconciledWith(ctx, seedA, ex, `"image":"firewall-ubuntu-3.0"`, `"image":"firewall-ubuntu-3.1","agentVersion":"v2.0.0"`,
			`"10.250.0.0/16"`, `"10.250.0.0/16","10.99.0.0/16"`)).
			Should(Equal("Reconcile Succeeded"))
		d := deploymentOf(ctx, seedA, namespace)
		Expect(d.Spec.Template.Spec.Image).To(Equal("firewall-ubuntu-3.0"))
		Expect(d.Spec.Template.Spec.AgentVersion).To(BeEmpty())
		Expect(d.Spec.Template.Spec.InternalPrefixes).To(ContainElement("10.99.0.0/16"), "rules are never held back")
		for _, fw := range firewalls(ctx, seedA, namespace) {
			Expect(fw.Spec.InternalPrefixes).To(ContainElement("10.99.0.0/16"))
			Expect(fw.Spec.Image).To(Equal("firewall-ubuntu-3.0"))
		}
		c := updatePending(ctx, seedA, ex)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(gardencorev1beta1.ConditionTrue))
		Expect(c.Reason).To(Equal("OutsideMaintenanceWindow"))
		Expect(c.Message).To(And(ContainSubstring(`image "firewall-ubuntu-3.0" -> "firewall-ubuntu-3.1"`), ContainSubstring(`agentVersion "" -> "v2.0.0"`),
			ContainSubstring(constants.AnnotationForceUpdate)))
		Eventually(func() []string { return eventReasons(ctx, seedA, namespace, "Extension", ex.Name) }).
			Should(ContainElement(ContainSubstring("OutsideMaintenanceWindow: image")))
		Expect(deploymentOf(ctx, seedA, namespace).Status.ObservedRevision).To(Equal(int64(1)), "no roll")

		By("in the window: the update is applied and rolls the firewall once")
		setShoot(ctx, seedA, namespace, maintenanceShoot(-30*time.Minute))
		inWindow := trigger(ctx, seedA, ex)
		Eventually(func() string {
			beatAndCountReady(ctx, seedA, namespace)()
			return inWindow()
		}).WithTimeout(time.Minute).Should(Equal("Reconcile Succeeded"))
		d = deploymentOf(ctx, seedA, namespace)
		Expect(d.Spec.Template.Spec.Image).To(Equal("firewall-ubuntu-3.1"))
		Expect(d.Spec.Template.Spec.AgentVersion).To(Equal("v2.0.0"))
		Expect(d.Status.ObservedRevision).To(Equal(int64(2)))
		Expect(updatePending(ctx, seedA, ex).Status).To(Equal(gardencorev1beta1.ConditionFalse))
		Eventually(func() []string { return eventReasons(ctx, seedA, namespace, "Extension", ex.Name) }).
			Should(ContainElement(And(ContainSubstring("FirewallUpdateApplied"), ContainSubstring("in the maintenance window"))))
		Eventually(func() []string {
			var images []string
			for _, fw := range firewalls(ctx, seedA, namespace) {
				images = append(images, fw.Spec.Image)
			}
			beatAndCountReady(ctx, seedA, namespace)()
			return images
		}).Should(Equal([]string{"firewall-ubuntu-3.1"}), "the old firewall goes once the new one is Ready")

		By("further reconciles in the window roll nothing more")
		again := trigger(ctx, seedA, ex)
		Eventually(func() string {
			beatAndCountReady(ctx, seedA, namespace)()
			return again()
		}).Should(Equal("Reconcile Succeeded"))
		Consistently(func() int64 { return deploymentOf(ctx, seedA, namespace).Status.ObservedRevision }).
			WithTimeout(3 * time.Second).Should(Equal(int64(2)))
		Expect(firewalls(ctx, seedA, namespace)).To(HaveLen(1))
	})

	It("applies a held-back update at once with the operator's force-update annotation, and removes it", func(ctx SpecContext) {
		namespace := "shoot--p--force"
		createShootWith(ctx, seedA, namespace, `{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","metadata":{"name":"s","namespace":"garden-p"},`+maintenanceShoot(2 * time.Hour)[1:])
		ex := newExtension(namespace, providerConfig)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		succeeded(ctx, seedA, ex)
		Eventually(reconciledWith(ctx, seedA, ex, `"image":"firewall-ubuntu-3.0"`, `"image":"firewall-ubuntu-3.2"`)).Should(Equal("Reconcile Succeeded"))
		Expect(deploymentOf(ctx, seedA, namespace).Spec.Template.Spec.Image).To(Equal("firewall-ubuntu-3.0"))
		Expect(updatePending(ctx, seedA, ex).Status).To(Equal(gardencorev1beta1.ConditionTrue))

		Expect(seedA.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
		patch := client.MergeFrom(ex.DeepCopy())
		metav1.SetMetaDataAnnotation(&ex.ObjectMeta, constants.AnnotationForceUpdate, "true")
		Expect(seedA.client.Patch(ctx, ex, patch)).To(Succeed())
		forced := trigger(ctx, seedA, ex)
		Eventually(func() string {
			beatAndCountReady(ctx, seedA, namespace)()
			return forced()
		}).WithTimeout(time.Minute).Should(Equal("Reconcile Succeeded"))
		d := deploymentOf(ctx, seedA, namespace)
		Expect(d.Spec.Template.Spec.Image).To(Equal("firewall-ubuntu-3.2"))
		Expect(d.Status.ObservedRevision).To(Equal(int64(2)))
		Expect(ex.Annotations).NotTo(HaveKey(constants.AnnotationForceUpdate), "a force applies once")
		Expect(updatePending(ctx, seedA, ex).Status).To(Equal(gardencorev1beta1.ConditionFalse))
		Eventually(func() []string { return eventReasons(ctx, seedA, namespace, "Extension", ex.Name) }).
			Should(ContainElement(And(ContainSubstring("FirewallUpdateApplied"), ContainSubstring("forced by the annotation"))))
		for _, fw := range firewalls(ctx, seedA, namespace) {
			Expect(fw.Labels[firewallv1alpha1.LabelTemplateHash]).NotTo(BeEmpty())
		}
	})
})
