package lab_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/lab"
	labstream "github.com/metal-firewall/gardener-extension-firewall/test/lab/stream"
)

// switchOverSpecs: a running shoot switches from provider-metal's firewall
// to this extension's. provider-metal's firewall runs firewall-controller,
// which cannot be built here (two of its dependencies are not served); it
// announces no distance, as a firewall of this extension at distance 0
// whose deployment is paused does: the shoot's firewall stands in for it,
// and the test writes firewall-controller-manager's FirewallDeployment and
// its status as firewall-controller-manager would, and frees that machine
// as it would, once the extension holds its replicas at 0.
func switchOverSpecs(e *labEnv) {
	Context("beside provider-metal's firewall", func() {
		BeforeEach(skipWithoutDistance)
		It("switches a running shoot over: the new firewall waits at the longest distance, traffic moves when the old one's routes go, then the new one takes the shortest", func(ctx SpecContext) {
			letStreamsThrough(ctx, e)
			fws := e.firewalls(ctx)
			Expect(fws).To(HaveLen(1))
			old := &fws[0]
			Expect(old.Spec.Distance).To(Equal(firewallv1alpha1.ShortestDistance))
			oldMachine := e.machineOf(old)
			Expect(oldMachine.MarkStreams(ctx, markOld)).To(Succeed())

			By("the shoot's firewall stands in for provider-metal's: its deployment paused, firewall-controller-manager's FirewallDeployment reports one Ready")
			own := &firewallv1alpha1.FirewallDeployment{}
			Expect(e.cSeed.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: constants.FirewallDeploymentName}, own)).To(Succeed())
			patch := client.MergeFrom(own.DeepCopy())
			metav1.SetMetaDataAnnotation(&own.ObjectMeta, firewallv1alpha1.AnnotationPaused, "true")
			Expect(e.cSeed.Patch(ctx, own, patch)).To(Succeed())
			DeferCleanup(func(ctx context.Context) {
				// The shoot's own deployment again, with a new firewall; the
				// stand-in's deployment goes.
				Expect(e.cSeed.Delete(ctx, &firewallv1alpha1.FirewallDeployment{ObjectMeta: metav1.ObjectMeta{Name: "switch", Namespace: e.namespace}})).To(Or(Succeed(), WithTransform(apierrors.IsNotFound, BeTrue())))
				Expect(e.cSeed.Get(ctx, client.ObjectKeyFromObject(own), own)).To(Succeed())
				patch := client.MergeFrom(own.DeepCopy())
				delete(own.Annotations, firewallv1alpha1.AnnotationPaused)
				Expect(e.cSeed.Patch(ctx, own, patch)).To(Succeed())
			})
			Expect(framework.WriteProviderFirewall(ctx, e.cSeed, e.namespace)).To(Succeed())
			Expect(framework.ReportProviderFirewall(ctx, e.cSeed, e.namespace, 1)).To(Succeed())

			streams, steps := e.startStreams(ctx)

			By("this extension's new firewall beside it")
			selector := map[string]string{constants.LabelFirewallDeployment: "switch"}
			sw := &firewallv1alpha1.FirewallDeployment{ObjectMeta: metav1.ObjectMeta{Name: "switch", Namespace: e.namespace}, Spec: *own.Spec.DeepCopy()}
			sw.Spec.Selector, sw.Spec.Template.Metadata.Labels = selector, selector
			Expect(e.cSeed.Create(ctx, sw)).To(Succeed())
			var newFw *firewallv1alpha1.Firewall
			var newMachine *lab.Machine
			counters := map[string]map[int]int{}
			sample := func() {
				fws, err := framework.Firewalls(ctx, e.cSeed, e.namespace)
				if err == nil {
					steps.observe(fws)
				}
				for _, m := range []*lab.Machine{oldMachine, newMachine} {
					if m == nil {
						continue
					}
					if c, err := m.StreamCounters(ctx); err == nil {
						counters[m.Name] = c
					}
				}
			}
			Eventually(func(g Gomega) {
				sample()
				newFw = nil
				for _, fw := range e.firewalls(ctx) {
					if fw.Name != old.Name && fw.Status.MachineStatus != nil {
						newFw = &fw
					}
				}
				g.Expect(newFw).NotTo(BeNil())
				g.Expect(newFw.Spec.Distance).To(Equal(firewallv1alpha1.LongestDistance), "provider-metal's firewall announces the shortest routes")
				newMachine = e.bootedWithAgent(ctx, g, newFw)
			}).WithTimeout(14 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			Expect(newMachine.MarkStreams(ctx, markNew)).To(Succeed())
			Eventually(func(g Gomega) {
				sample()
				fw := e.firewall(ctx, newFw.Name)
				g.Expect(fw.Status.AgentStatus).To(HaveField("Distance", HaveValue(BeEquivalentTo(firewallv1alpha1.LongestDistance))))
				g.Expect(fw.Status.Conditions).To(ContainElement(And(HaveField("Type", firewallv1alpha1.ConditionReady), HaveField("Status", metav1.ConditionTrue))))
			}).WithTimeout(10 * time.Minute).WithPolling(time.Second).Should(Succeed())
			Consistently(func() int32 { return e.firewall(ctx, newFw.Name).Spec.Distance }).WithTimeout(5*time.Second).Should(Equal(firewallv1alpha1.LongestDistance),
				"Ready, but provider-metal's firewall still runs")

			By("held at 0 replicas (as the Extension's reconcile and the webhook hold it), firewall-controller-manager frees provider-metal's machine")
			deploy, err := framework.ProviderFirewall(ctx, e.cSeed, e.namespace)
			Expect(err).NotTo(HaveOccurred())
			held := client.MergeFrom(deploy.DeepCopy())
			Expect(unstructured.SetNestedField(deploy.Object, int64(0), "spec", "replicas")).To(Succeed())
			Expect(e.cSeed.Patch(ctx, deploy, held)).To(Succeed())
			steps.record(old.Name, "freed")
			sets := &firewallv1alpha1.FirewallSetList{}
			Expect(e.cSeed.List(ctx, sets, client.InNamespace(e.namespace))).To(Succeed())
			for i := range sets.Items {
				if metav1.IsControlledBy(&sets.Items[i], own) {
					Expect(e.cSeed.Delete(ctx, &sets.Items[i])).To(Succeed())
				}
			}
			e.waitHalted(ctx, oldMachine, old.Name, steps, sample)
			Expect(framework.ReportProviderFirewall(ctx, e.cSeed, e.namespace, 0)).To(Succeed())

			By("firewall-controller-manager reports no replica: the new firewall takes the shortest distance")
			Eventually(func(g Gomega) {
				sample()
				g.Expect(e.firewall(ctx, newFw.Name).Status.AgentStatus).To(HaveField("Distance", HaveValue(BeEquivalentTo(firewallv1alpha1.ShortestDistance))))
			}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
			streamOn(streams)
			res := reportStreams(ctx, streams, "switch-over", "switch-over from provider-metal's firewall", counters, steps)

			for _, r := range []labstream.Report{res.ToHost, res.ToNode} {
				byTTL := carriedBy(r)
				Expect(byTTL).To(HaveKey(markOld-1), "the old firewall carried the traffic first")
				Expect(byTTL).To(HaveKey(markNew-1), "the new firewall carries it in the end")
				// Once when the old firewall's routes go; the new firewall's own
				// change to 0 moves nothing. Flows spread over both would switch
				// with nearly every packet.
				Expect(r.Switches).To(BeNumerically("<=", 2), "no moment in which both firewalls carried this direction")
				Expect(r.LastTTL).To(Equal(markNew - 1))
			}
			Expect(e.probes.Forbidden()).To(Succeed())
		})
	})
}
