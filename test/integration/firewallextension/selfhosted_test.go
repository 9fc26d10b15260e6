package firewallextension_test

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

var _ = Describe("Extension firewall of a self-hosted shoot", func() {
	It("refuses a Cluster without a seed with an error that names it, creating nothing, and is deleted", func(ctx SpecContext) {
		namespace := "shoot--p--selfhosted"
		Expect(framework.CreateSelfHosted(ctx, seedA.client, namespace)).To(Succeed())
		ex := newExtension(namespace, providerConfig)
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(seedA.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			g.Expect(ex.Status.LastError).NotTo(BeNil())
			g.Expect(ex.Status.LastError.Description).To(ContainSubstring("cluster " + namespace + " is of a self-hosted shoot"))
			g.Expect(ex.Status.LastError.Codes).To(ContainElement(gardencorev1beta1.ErrorConfigurationProblem))
		}).Should(Succeed())
		Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "firewall"}, &firewallv1alpha1.FirewallDeployment{})).To(Satisfy(apierrors.IsNotFound))
		secrets := &corev1.SecretList{}
		Expect(seedA.client.List(ctx, secrets, client.InNamespace(namespace))).To(Succeed())
		Expect(secrets.Items).To(BeEmpty(), "no shoot access, no certificates")
		mrs := &resourcesv1alpha1.ManagedResourceList{}
		Expect(seedA.client.List(ctx, mrs, client.InNamespace(namespace))).To(Succeed())
		Expect(mrs.Items).To(BeEmpty())

		By("deleting it: nothing to release, it goes")
		Expect(seedA.client.Delete(ctx, ex)).To(Succeed())
		Eventually(func() error { return seedA.client.Get(ctx, client.ObjectKeyFromObject(ex), ex) }).Should(Satisfy(apierrors.IsNotFound))
	})
})
