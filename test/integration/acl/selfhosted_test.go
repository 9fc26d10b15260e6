package acl_test

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

var _ = Describe("Extension acl of a self-hosted shoot", func() {
	It("refuses a Cluster without a seed with an error that names it, deploying nothing, and is deleted", func() {
		namespace := "shoot--acl--selfhosted"
		Expect(framework.CreateSelfHosted(ctx(), testClient, namespace)).To(Succeed())
		ex := &extensionsv1alpha1.Extension{
			ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: namespace},
			Spec: extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{
				Type:           constants.ACLExtensionType,
				ProviderConfig: &runtime.RawExtension{Raw: []byte(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24"]}}`)},
			}},
		}
		Expect(testClient.Create(ctx(), ex)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(testClient.Get(ctx(), client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			g.Expect(ex.Status.LastError).NotTo(BeNil())
			g.Expect(ex.Status.LastError.Description).To(ContainSubstring("cluster " + namespace + " is of a self-hosted shoot"))
			g.Expect(ex.Status.LastError.Codes).To(ContainElement(gardencorev1beta1.ErrorConfigurationProblem))
		}).WithTimeout(timeout).Should(Succeed())
		mrs := &resourcesv1alpha1.ManagedResourceList{}
		Expect(testClient.List(ctx(), mrs, client.InNamespace(namespace))).To(Succeed())
		Expect(mrs.Items).To(BeEmpty())
		Expect(ex.Status.ProviderStatus).To(BeNil())

		By("deleting it: nothing to remove, it goes")
		Expect(testClient.Delete(ctx(), ex)).To(Succeed())
		Eventually(func() error { return testClient.Get(ctx(), client.ObjectKeyFromObject(ex), ex) }).WithTimeout(timeout).Should(Satisfy(apierrors.IsNotFound))
	})
})
