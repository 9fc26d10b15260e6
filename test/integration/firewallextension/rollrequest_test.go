package firewallextension_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/rollrequest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/shootsource"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

var _ = Describe("A roll requested from the shoot", func() {
	It("rolls the firewall once when the owner annotates its FirewallMonitor, records who asked, and removes the annotation", func(ctx SpecContext) {
		namespace := "shoot--p--rollreq"
		createShoot(ctx, seedA, namespace)
		// Seed B stands in for this shoot's kube-apiserver: the `gardener` secret points there.
		shoot := seedB.client
		gardenerSecret, err := testenv.GardenerSecret(namespace, seedB.cp.Config)
		Expect(err).NotTo(HaveOccurred())
		existing := &corev1.Secret{}
		Expect(seedA.client.Get(ctx, client.ObjectKeyFromObject(gardenerSecret), existing)).To(Succeed())
		existing.Data = gardenerSecret.Data
		Expect(seedA.client.Update(ctx, existing)).To(Succeed())
		// An image of its own: firewall names (from the template's hash) differ from other specs'.
		ex := newExtension(namespace, strings.Replace(providerConfig, "firewall-ubuntu-3.0", "firewall-ubuntu-3.0-roll", 1))
		Expect(seedA.client.Create(ctx, ex)).To(Succeed())
		succeeded(ctx, seedA, ex)
		old := firewalls(ctx, seedA, namespace)[0]

		By("the agent's monitor in the shoot, annotated by the owner")
		Expect(client.IgnoreAlreadyExists(shoot.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: firewallv1alpha1.FirewallMonitorNamespace}}))).To(Succeed())
		stale := &firewallv1alpha1.FirewallMonitor{ObjectMeta: metav1.ObjectMeta{Name: "firewall-not-ours", Namespace: firewallv1alpha1.FirewallMonitorNamespace,
			Annotations: map[string]string{firewallv1alpha1.AnnotationRollSet: "true"}}}
		Expect(shoot.Create(ctx, stale)).To(Succeed())
		monitor := &firewallv1alpha1.FirewallMonitor{ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: firewallv1alpha1.FirewallMonitorNamespace}}
		Expect(shoot.Create(ctx, monitor)).To(Succeed())
		patch := client.MergeFrom(monitor.DeepCopy())
		monitor.Annotations = map[string]string{firewallv1alpha1.AnnotationRollSet: "true"}
		Expect(shoot.Patch(ctx, monitor, patch, client.FieldOwner("kubectl-annotate"))).To(Succeed())

		By("the manager rolls: a new set, the old firewall gone once the new one is Ready")
		Eventually(func() int64 { return deploymentOf(ctx, seedA, namespace).Status.ObservedRevision }).Should(Equal(int64(2)))
		Eventually(func(g Gomega) {
			g.Expect(shoot.Get(ctx, client.ObjectKeyFromObject(monitor), monitor)).To(Succeed())
			g.Expect(monitor.Annotations).NotTo(HaveKey(firewallv1alpha1.AnnotationRollSet), "acknowledged: it rolls once")
			g.Expect(monitor.Annotations).NotTo(HaveKey(firewallv1alpha1.AnnotationRollSetAcknowledged))
		}).Should(Succeed())
		Eventually(func() []string {
			beatAndCountReady(ctx, seedA, namespace)()
			var names []string
			for _, fw := range firewalls(ctx, seedA, namespace) {
				names = append(names, fw.Name)
			}
			return names
		}).WithTimeout(time.Minute).Should(And(HaveLen(1), Not(ContainElement(old.Name))))
		Eventually(func() []string { return eventReasons(ctx, seedA, namespace, "FirewallDeployment", "firewall") }).Should(ContainElement(And(
			HavePrefix(rollrequest.ReasonRollRequested+": "),
			ContainSubstring(`FirewallMonitor firewall/"`+old.Name+`"`),
			ContainSubstring(`annotation set by "kubectl-annotate" at `))))

		By("once: no further roll, and a monitor of no firewall of this shoot asks for nothing")
		Consistently(func() int64 { return deploymentOf(ctx, seedA, namespace).Status.ObservedRevision }).
			WithTimeout(5 * time.Second).Should(Equal(int64(2)))
		Expect(shoot.Get(ctx, client.ObjectKeyFromObject(stale), stale)).To(Succeed())
		Expect(stale.Annotations).To(HaveKey(firewallv1alpha1.AnnotationRollSet), "left alone")
		Expect(shoot.Delete(ctx, stale)).To(Succeed())
		Expect(shoot.Delete(ctx, monitor)).To(Or(Succeed(), Satisfy(apierrors.IsNotFound)))

		By("a shoot moved from metal-stack: the owner annotates firewall-controller-manager's FirewallMonitor as before")
		current := firewalls(ctx, seedA, namespace)[0]
		theirs := &unstructured.Unstructured{}
		theirs.SetGroupVersionKind(shootsource.MetalStackMonitorGVK)
		theirs.SetName(current.Name)
		theirs.SetNamespace(firewallv1alpha1.FirewallMonitorNamespace)
		theirs.Object["size"], theirs.Object["image"], theirs.Object["partition"], theirs.Object["project"] = "s", "i", "p", "p"
		theirs.Object["networks"], theirs.Object["conditions"] = []any{"internet"}, []any{}
		Expect(shoot.Create(ctx, theirs)).To(Succeed())
		patch = client.MergeFrom(theirs.DeepCopy())
		theirs.SetAnnotations(map[string]string{"firewall.metal-stack.io/roll-set": "true"})
		Expect(shoot.Patch(ctx, theirs, patch, client.FieldOwner("kubectl-annotate"))).To(Succeed())
		Eventually(func() int64 { return deploymentOf(ctx, seedA, namespace).Status.ObservedRevision }).Should(Equal(int64(3)))
		Eventually(func(g Gomega) {
			g.Expect(shoot.Get(ctx, client.ObjectKeyFromObject(theirs), theirs)).To(Succeed())
			g.Expect(theirs.GetAnnotations()).NotTo(HaveKey("firewall.metal-stack.io/roll-set"), "acknowledged: it rolls once")
		}).Should(Succeed())
		Eventually(func() []string { return eventReasons(ctx, seedA, namespace, "FirewallDeployment", "firewall") }).Should(ContainElement(
			ContainSubstring(`FirewallMonitor.firewall.metal-stack.io firewall/"` + current.Name + `" (annotation set by "kubectl-annotate"`)))
		Consistently(func() int64 { return deploymentOf(ctx, seedA, namespace).Status.ObservedRevision }).
			WithTimeout(3 * time.Second).Should(Equal(int64(3)))
		Expect(shoot.Delete(ctx, theirs)).To(Succeed())
	})
})
