package firewallextension_test

import (
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

var _ = Describe("Extension firewall migration of the lifecycle", func() {
	It("carries a roll asked from the shoot and an update held back for the maintenance window: the restore rolls nothing", func(ctx SpecContext) {
		namespace := "shoot--p--carry"
		shoot := `{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","metadata":{"name":"s","namespace":"garden-p"},` + maintenanceShoot(2 * time.Hour)[1:]
		createShootWith(ctx, seedA, namespace, shoot)
		ex := newExtension(namespace, strings.Replace(providerConfig, "firewall-ubuntu-3.0", "firewall-ubuntu-3.0-carry", 1))
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		succeeded(ctx, seedA, ex)

		By("a roll (as asked from the shoot) and an image held back")
		d := deploymentOf(ctx, seedA, namespace)
		patch := client.MergeFrom(d.DeepCopy())
		metav1.SetMetaDataAnnotation(&d.ObjectMeta, firewallv1alpha1.AnnotationRoll, "shoot-r1")
		Expect(seedA.client.Patch(ctx, d, patch)).To(Succeed())
		Eventually(func() []string {
			beatAndCountReady(ctx, seedA, namespace)()
			var names []string
			for _, fw := range firewalls(ctx, seedA, namespace) {
				names = append(names, fw.Name)
			}
			return names
		}).WithTimeout(time.Minute).Should(HaveLen(1))
		Eventually(func() int64 { return deploymentOf(ctx, seedA, namespace).Status.ObservedRevision }).Should(Equal(int64(2)))
		Eventually(reconciledWith(ctx, seedA, ex, "firewall-ubuntu-3.0-carry", "firewall-ubuntu-3.1-carry")).Should(Equal("Reconcile Succeeded"))
		Expect(deploymentOf(ctx, seedA, namespace).Spec.Template.Spec.Image).To(Equal("firewall-ubuntu-3.0-carry"))
		fw := firewalls(ctx, seedA, namespace)[0]
		createdBefore := provider.CreatedIn(namespace)

		By("migrating to seed B")
		annotate(ctx, seedA, ex, v1beta1constants.GardenerOperationMigrate, nil)
		Eventually(lastOperation(ctx, seedA, ex)).WithTimeout(time.Minute).Should(Equal("Migrate Succeeded"))
		state := ex.Status.State.DeepCopy()
		Expect(seedA.client.Delete(ctx, ex)).To(Succeed())

		createShootWith(ctx, seedB, namespace, shoot)
		exB := newExtension(namespace, string(ex.Spec.ProviderConfig.Raw))
		Expect(framework.PrepareRestore(ctx, seedB.client, exB, state, time.Minute)).To(Succeed())
		annotate(ctx, seedB, exB, v1beta1constants.GardenerOperationRestore, nil)
		Eventually(func() string {
			beatAndCountReady(ctx, seedB, namespace)()
			return lastOperation(ctx, seedB, exB)()
		}).WithTimeout(time.Minute).Should(MatchRegexp(`^(Restore|Reconcile) Succeeded$`))

		By("the same firewall, the roll and the held-back image as they were")
		dB := deploymentOf(ctx, seedB, namespace)
		Expect(dB.Annotations).To(HaveKeyWithValue(firewallv1alpha1.AnnotationRoll, "shoot-r1"))
		Expect(dB.Spec.Template.Spec.Image).To(Equal("firewall-ubuntu-3.0-carry"))
		Expect(updatePending(ctx, seedB, exB).Status).To(Equal(gardencorev1beta1.ConditionTrue))
		Consistently(func(g Gomega) {
			beatAndCountReady(ctx, seedB, namespace)()
			fws := firewalls(ctx, seedB, namespace)
			g.Expect(fws).To(HaveLen(1))
			g.Expect(fws[0].Name).To(Equal(fw.Name))
			g.Expect(fws[0].Status.MachineStatus.MachineID).To(Equal(fw.Status.MachineStatus.MachineID))
		}).WithTimeout(3 * time.Second).Should(Succeed())
		Expect(provider.CreatedIn(namespace)).To(Equal(createdBefore), "no new machine")
	})
})
