package acl_test

import (
	"strings"

	"github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

// gardenlet's RemoveHTTPProxyLegacyPort (GEP-30) takes the tls-tunnel port
// (8132) off the ingress gateway's Service: Istio then builds no 8132
// listener, and the ACL deploys nothing for it.
var _ = Describe("Extension acl on a gateway without the legacy VPN port", func() {
	It("deploys the HTTP-CONNECT filter for 8443 only, stays Succeeded, and follows the Service's ports", func() {
		const ingress, namespace = "istio-ingress--gate", "shoot--acl--gate"
		labels := map[string]string{"app": "istio-ingressgateway", "istio": "ingressgateway--gate"}
		Expect(testClient.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ingress, Labels: map[string]string{"gardener.cloud/role": "istio-ingress"}}})).To(Succeed())
		// The Service as gardenlet renders it with the gate (seed/components.go: newIstio).
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: ingress, Labels: labels},
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{
				{Name: "tcp", Port: 443, TargetPort: intstr.FromInt32(9443)},
				{Name: "http-proxy", Port: 8443, TargetPort: intstr.FromInt32(8443)},
			}},
		}
		Expect(testClient.Create(ctx(), svc)).To(Succeed())
		createShoot(namespace, []string{"api.gate.acl.example.com"}, labels)
		ex := &extensionsv1alpha1.Extension{
			ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: namespace},
			Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: constants.ACLExtensionType, ProviderConfig: rule("ALLOW", "192.0.2.0/24")}},
		}
		Expect(testClient.Create(ctx(), ex)).To(Succeed())
		succeeded := func(g Gomega) {
			g.Expect(testClient.Get(ctx(), client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			g.Expect(ex.Status.LastOperation).NotTo(BeNil())
			g.Expect(ex.Status.LastOperation.State).To(Equal(v1beta1.LastOperationStateSucceeded), "%v", ex.Status.LastError)
		}
		Eventually(succeeded).WithTimeout(timeout).Should(Succeed())
		Eventually(func(g Gomega) {
			shared := sharedFilter(g, ingress)
			g.Expect(shared).To(ContainSubstring(".shoot--acl--gate.svc.cluster.local"))
			g.Expect(shared).To(ContainSubstring(envoy.HTTPFilterName))
			g.Expect(shared).NotTo(ContainSubstring(envoy.LegacyHTTPFilterName))
			g.Expect(shared).NotTo(ContainSubstring(`"portNumber":8132`))
		}).WithTimeout(timeout).Should(Succeed())

		legacy := func(want bool) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				shared := sharedFilter(g, ingress)
				g.Expect(strings.Contains(shared, envoy.LegacyHTTPFilterName)).To(Equal(want))
				g.Expect(strings.Contains(shared, `"portNumber":8132`)).To(Equal(want))
			}).WithTimeout(timeout).Should(Succeed())
		}

		By("the gate turned off again: gardenlet puts the tls-tunnel port back, the shared filters follow the Service alone")
		patch := client.MergeFrom(svc.DeepCopy())
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "tls-tunnel", Port: 8132, TargetPort: intstr.FromInt32(8132)})
		Expect(testClient.Patch(ctx(), svc, patch)).To(Succeed())
		legacy(true)

		By("the gate turned on: the port goes, and the legacy listener's filter with it")
		patch = client.MergeFrom(svc.DeepCopy())
		svc.Spec.Ports = svc.Spec.Ports[:2]
		Expect(testClient.Patch(ctx(), svc, patch)).To(Succeed())
		legacy(false)
		Eventually(succeeded).WithTimeout(timeout).Should(Succeed())

		Expect(testClient.Delete(ctx(), ex)).To(Succeed())
		Eventually(func(g Gomega) {
			objs, err := framework.ACLSharedObjects(ctx(), testClient, ingress)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(objs).To(BeEmpty())
		}).WithTimeout(timeout).Should(Succeed())
	})
})
