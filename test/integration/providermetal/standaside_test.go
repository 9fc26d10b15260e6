package providermetal_test

import (
	"context"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

func gepmReconcile(ctx context.Context, namespace string) {
	GinkgoHelper()
	Expect(framework.WriteProviderFirewall(ctx, testClient, namespace)).To(Succeed())
}

func fcmReports(ctx context.Context, namespace string, ready int64) {
	GinkgoHelper()
	Expect(framework.ReportProviderFirewall(ctx, testClient, namespace, ready)).To(Succeed())
}

func fcmDeployment(ctx context.Context, namespace string) *unstructured.Unstructured {
	GinkgoHelper()
	deploy, err := framework.ProviderFirewall(ctx, testClient, namespace)
	Expect(err).NotTo(HaveOccurred())
	return deploy
}

func replicas(ctx context.Context, namespace string) int64 {
	GinkgoHelper()
	r, err := framework.ProviderFirewallReplicas(ctx, testClient, namespace)
	Expect(err).NotTo(HaveOccurred())
	return r
}

// shootNamespace creates a shoot namespace with gardenlet's labels for the
// shoot's extension types.
func shootNamespace(ctx context.Context, name string, types ...string) {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"gardener.cloud/role": "shoot"}}}
	for _, t := range types {
		ns.Labels["extensions.gardener.cloud/"+t] = "true"
	}
	Expect(testClient.Create(ctx, ns)).To(Succeed())
}

func firewallExtension(ctx context.Context, namespace string) *extensionsv1alpha1.Extension {
	GinkgoHelper()
	ex := &extensionsv1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: "firewall", Namespace: namespace, Finalizers: []string{"extensions.gardener.cloud/firewall"}},
		Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: constants.FirewallExtensionType}},
	}
	Expect(testClient.Create(ctx, ex)).To(Succeed())
	return ex
}

var _ = Describe("provider-metal's firewall beside a firewall Extension", func() {
	It("is held at 0 replicas in a new shoot, whatever provider-metal writes, and gets its replicas back once the Extension goes", func(ctx SpecContext) {
		namespace := "shoot--p--new"
		shootNamespace(ctx, namespace, "metal", constants.FirewallExtensionType)
		ex := firewallExtension(ctx, namespace)

		By("provider-metal's first Worker reconcile")
		gepmReconcile(ctx, namespace)
		Expect(replicas(ctx, namespace)).To(BeZero())
		Expect(fcmDeployment(ctx, namespace).GetAnnotations()).To(And(
			HaveKeyWithValue(constants.AnnotationHeldReplicas, "1"),
			HaveKeyWithValue("firewall.metal-stack.io/reconcile", "true")))

		By("FCM reports 0 of 0, and provider-metal writes again and again")
		fcmReports(ctx, namespace, 0)
		for range 5 {
			gepmReconcile(ctx, namespace)
			Expect(replicas(ctx, namespace)).To(BeZero())
		}

		By("the Extension deleted: provider-metal's next write stands")
		Expect(testClient.Delete(ctx, ex)).To(Succeed())
		gepmReconcile(ctx, namespace)
		Expect(replicas(ctx, namespace)).To(BeEquivalentTo(1))
	})

	It("holds a running shoot's firewall only once the Extension's own firewall is Ready", func(ctx SpecContext) {
		namespace := "shoot--p--running"
		shootNamespace(ctx, namespace, "metal", constants.FirewallExtensionType)
		gepmReconcile(ctx, namespace)
		fcmReports(ctx, namespace, 1)
		firewallExtension(ctx, namespace)

		By("the Extension's FirewallDeployment, not Ready yet")
		own := &firewallv1alpha1.FirewallDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: constants.FirewallDeploymentName, Namespace: namespace},
			Spec: firewallv1alpha1.FirewallDeploymentSpec{Replicas: 1, Selector: map[string]string{"a": "b"},
				Template: firewallv1alpha1.FirewallTemplateSpec{Spec: firewallv1alpha1.FirewallSpec{Size: "n1-medium-x86", Image: "firewall-ubuntu-3.0", Partition: "p1", Project: "proj", Networks: []string{"internet"}}}},
		}
		Expect(testClient.Create(ctx, own)).To(Succeed())
		gepmReconcile(ctx, namespace)
		Expect(replicas(ctx, namespace)).To(BeEquivalentTo(1), "the running firewall carries the shoot until the new one forwards")

		By("the Extension's firewall Ready")
		own.Status.ReadyReplicas = 1
		Expect(testClient.Status().Update(ctx, own)).To(Succeed())
		gepmReconcile(ctx, namespace)
		Expect(replicas(ctx, namespace)).To(BeZero())
	})

	It("leaves the shoots without a firewall Extension alone: their writes never reach the webhook", func(ctx SpecContext) {
		namespace := "shoot--p--other"
		shootNamespace(ctx, namespace, "metal")
		// An Extension of the type in a namespace without gardenlet's label: out of scope.
		firewallExtension(ctx, namespace)
		gepmReconcile(ctx, namespace)
		Expect(replicas(ctx, namespace)).To(BeEquivalentTo(1))
		Expect(fcmDeployment(ctx, namespace).GetAnnotations()).NotTo(HaveKey(constants.AnnotationHeldReplicas))
	})
})
