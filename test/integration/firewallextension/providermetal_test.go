package firewallextension_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

var _ = Describe("Extension firewall beside provider-metal's firewall", func() {
	It("switches a running shoot over: its firewall comes in at the longest distance, holds provider-metal's once it forwards, and takes the shortest once that one is gone", func(ctx SpecContext) {
		namespace := "shoot--p--switch"
		createShoot(ctx, seedA, namespace)
		By("provider-metal's firewall runs")
		Expect(framework.WriteProviderFirewall(ctx, seedA.client, namespace)).To(Succeed())
		Expect(framework.ReportProviderFirewall(ctx, seedA.client, namespace, 1)).To(Succeed())

		ex := newExtension(namespace, strings.Replace(providerConfig, "firewall-ubuntu-3.0", "firewall-ubuntu-3.0-switch", 1))
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		succeeded(ctx, seedA, ex)
		fws := firewalls(ctx, seedA, namespace)
		Expect(fws).To(HaveLen(1))
		Expect(fws[0].Spec.Distance).To(Equal(firewallv1alpha1.LongestDistance), "provider-metal's firewall announces the shortest routes")

		By("this extension's firewall forwards: provider-metal's is held at once, not at its next Worker reconcile")
		Eventually(func() (int64, error) { return framework.ProviderFirewallReplicas(ctx, seedA.client, namespace) }).Should(BeZero())
		deploy, err := framework.ProviderFirewall(ctx, seedA.client, namespace)
		Expect(err).NotTo(HaveOccurred())
		Expect(deploy.GetAnnotations()).To(HaveKeyWithValue(constants.AnnotationHeldReplicas, "1"))
		Consistently(func() int32 { return firewalls(ctx, seedA, namespace)[0].Spec.Distance }).WithTimeout(3*time.Second).Should(Equal(firewallv1alpha1.LongestDistance),
			"firewall-controller-manager still reports provider-metal's firewall")

		By("firewall-controller-manager reports it gone: the shortest distance")
		Expect(framework.ReportProviderFirewall(ctx, seedA.client, namespace, 0)).To(Succeed())
		Eventually(func() int32 { return firewalls(ctx, seedA, namespace)[0].Spec.Distance }).WithTimeout(time.Minute).Should(Equal(firewallv1alpha1.ShortestDistance))
	})

	It("gives provider-metal's firewall its replicas back when it goes, and keeps its own firewall until that one is Ready", func(ctx SpecContext) {
		namespace := "shoot--p--giveback"
		createShoot(ctx, seedA, namespace)
		ex := newExtension(namespace, strings.Replace(providerConfig, "firewall-ubuntu-3.0", "firewall-ubuntu-3.0-giveback", 1))
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		succeeded(ctx, seedA, ex)
		Expect(firewalls(ctx, seedA, namespace)).To(HaveLen(1))

		By("provider-metal's FirewallDeployment as the webhook holds it: 0 replicas, the 1 asked for kept")
		Expect(framework.WriteProviderFirewall(ctx, seedA.client, namespace)).To(Succeed())
		deploy, err := framework.ProviderFirewall(ctx, seedA.client, namespace)
		Expect(err).NotTo(HaveOccurred())
		patch := client.MergeFrom(deploy.DeepCopy())
		Expect(unstructured.SetNestedField(deploy.Object, int64(0), "spec", "replicas")).To(Succeed())
		deploy.SetAnnotations(map[string]string{constants.AnnotationHeldReplicas: "1"})
		Expect(seedA.client.Patch(ctx, deploy, patch)).To(Succeed())
		Expect(framework.ReportProviderFirewall(ctx, seedA.client, namespace, 0)).To(Succeed())

		By("the Extension deleted: provider-metal's firewall first")
		Expect(seedA.client.Delete(ctx, ex)).To(Succeed())
		Eventually(func() (int64, error) { return framework.ProviderFirewallReplicas(ctx, seedA.client, namespace) }).WithTimeout(time.Minute).Should(BeEquivalentTo(1))
		Consistently(func() int { return len(firewalls(ctx, seedA, namespace)) }).WithTimeout(3*time.Second).Should(Equal(1),
			"the shoot's own firewall stays while provider-metal's is not Ready")
		Eventually(func() int32 { return firewalls(ctx, seedA, namespace)[0].Spec.Distance }).Should(Equal(firewallv1alpha1.LongestDistance),
			"it yields: provider-metal's new firewall takes the traffic when it announces")

		By("firewall-controller-manager reports provider-metal's firewall Ready: this extension's goes")
		Expect(framework.ReportProviderFirewall(ctx, seedA.client, namespace, 1)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(seedA.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)) }).WithTimeout(time.Minute).Should(BeTrue())
		Expect(firewalls(ctx, seedA, namespace)).To(BeEmpty())
		deploy, err = framework.ProviderFirewall(ctx, seedA.client, namespace)
		Expect(err).NotTo(HaveOccurred())
		Expect(deploy.GetAnnotations()).NotTo(HaveKey(constants.AnnotationHeldReplicas), "given back: a later Extension holds afresh")
	})
})
