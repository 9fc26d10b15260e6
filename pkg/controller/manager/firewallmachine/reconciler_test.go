package firewallmachine_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallmachine"
)

var _ = Describe("Reconciler", func() {
	condition := func(fw *firewallv1alpha1.Firewall, t string) metav1.Condition {
		GinkgoHelper()
		c := meta.FindStatusCondition(fw.Status.Conditions, t)
		Expect(c).NotTo(BeNil(), "condition %s", t)
		return *c
	}

	It("creates a machine only when Find returns none, never a second one", func() {
		e := newEnv(newFirewall(), nil)
		e.reconcile()
		Expect(e.provider.Created()).To(Equal(1))
		id := e.provider.IDs()[0]
		fw := e.firewall()
		Expect(fw.Finalizers).To(ContainElement(firewallmachine.Finalizer))
		Expect(fw.Status.MachineStatus).To(HaveField("MachineID", id))
		Expect(condition(fw, firewallv1alpha1.ConditionCreated)).To(HaveField("Status", metav1.ConditionTrue))
		Expect(e.provider.Userdata(id)).To(ConsistOf(HaveField("Path", "/etc/firewall-agent/config.yaml")))

		e.reconcile()
		Expect(e.provider.Created()).To(Equal(1))

		By("finding it by name and tags when the status lost its ID")
		patch := client.MergeFrom(fw.DeepCopy())
		fw.Status.MachineStatus = nil
		Expect(e.c.Status().Patch(e.ctx, fw, patch)).To(Succeed())
		e.reconcile()
		Expect(e.provider.Created()).To(Equal(1))
		Expect(e.firewall().Status.MachineStatus).To(HaveField("MachineID", id))
	})

	It("takes over the machine of a restored Firewall instead of creating one", func() {
		restored := newFirewall()
		e := newEnv(restored, nil)
		_, err := e.provider.Create(e.ctx, newFirewall(), nil) // by the old seed, for the same Firewall
		Expect(err).NotTo(HaveOccurred())
		e.reconcile()
		Expect(e.provider.Created()).To(Equal(1))
		Expect(e.firewall().Status.MachineStatus).To(HaveField("MachineID", e.provider.IDs()[0]))
	})

	It("reads secret-backed userdata at provisioning time and creates no machine without it", func() {
		fw := newFirewall()
		fw.Spec.UserdataContents = append(fw.Spec.UserdataContents, firewallv1alpha1.UserdataContent{
			Path: "/etc/firewall-agent/shoot.kubeconfig", SecretRef: &firewallv1alpha1.SecretKeyReference{Name: "shoot-access", Key: "kubeconfig"}})
		e := newEnv(fw, nil)
		_, err := e.r.Reconcile(e.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(fw)})
		Expect(err).To(MatchError(ContainSubstring(`spec.userdataContents[1].secretRef: reading secret "shoot-access"`)))
		Expect(e.provider.Created()).To(BeZero())

		Expect(e.c.Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shoot-access", Namespace: namespace},
			Data: map[string][]byte{"kubeconfig": []byte("shoot-kubeconfig")}})).To(Succeed())
		e.reconcile()
		Expect(e.provider.Userdata(e.provider.IDs()[0])).To(ContainElement(And(
			HaveField("Path", "/etc/firewall-agent/shoot.kubeconfig"), HaveField("Content", []byte("shoot-kubeconfig")))))
	})

	It("is Ready while the agent reports, and Crashing once it stops", func() {
		e := newEnv(newFirewall(), nil)
		e.reconcile()
		fw := e.firewall()
		Expect(fw.Status.Phase).To(Equal(firewallv1alpha1.FirewallPhaseCreating))
		Expect(condition(fw, firewallv1alpha1.ConditionReady)).To(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", firewallv1alpha1.ReasonBooting), HaveField("Message", "no agent heartbeat within 2m0s")),
			"never Ready: its set measures it against the create timeout")

		e.heartbeat()
		e.clk.Step(30 * time.Second)
		Expect(e.reconcile().RequeueAfter).To(Equal(heartbeatTimeout-30*time.Second), "when the heartbeat ages out")
		fw = e.firewall()
		Expect(fw.Status.Phase).To(Equal(firewallv1alpha1.FirewallPhaseRunning))
		for _, t := range []string{firewallv1alpha1.ConditionReady, firewallv1alpha1.ConditionSeedConnected, firewallv1alpha1.ConditionConnected} {
			Expect(condition(fw, t)).To(HaveField("Status", metav1.ConditionTrue), t)
		}
		Expect(condition(fw, firewallv1alpha1.ConditionReady)).To(HaveField("Reason", firewallv1alpha1.ReasonReady))

		e.clk.Step(heartbeatTimeout)
		e.reconcile()
		fw = e.firewall()
		Expect(fw.Status.Phase).To(Equal(firewallv1alpha1.FirewallPhaseCrashing), "it was Ready before")
		Expect(condition(fw, firewallv1alpha1.ConditionSeedConnected)).To(HaveField("Status", metav1.ConditionFalse))
		Expect(condition(fw, firewallv1alpha1.ConditionReady)).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", firewallv1alpha1.ReasonNotReady)),
			"it was Ready: its set measures it against the health timeout")
	})

	It("is Creating until the health timeout, then Crashing, when the agent never reports", func() {
		e := newEnv(newFirewall(), nil)
		e.reconcile()
		e.clk.Step(healthTimeout - time.Minute)
		Expect(e.reconcile().RequeueAfter).To(Equal(time.Minute))
		Expect(e.firewall().Status.Phase).To(Equal(firewallv1alpha1.FirewallPhaseCreating))
		e.clk.Step(2 * time.Minute)
		e.reconcile()
		Expect(e.firewall().Status.Phase).To(Equal(firewallv1alpha1.FirewallPhaseCrashing))
	})

	It("is Ready without a heartbeat when told its agent cannot reach the seed", func() {
		fw := newFirewall()
		fw.Annotations = map[string]string{firewallv1alpha1.AnnotationNoControllerConnection: "true"}
		e := newEnv(fw, nil)
		e.reconcile()
		fw = e.firewall()
		Expect(fw.Status.Phase).To(Equal(firewallv1alpha1.FirewallPhaseRunning))
		Expect(condition(fw, firewallv1alpha1.ConditionReady)).To(HaveField("Message", ContainSubstring("heartbeat not required")))
	})

	It("leaves a paused Firewall alone", func() {
		fw := newFirewall()
		fw.Annotations = map[string]string{firewallv1alpha1.AnnotationPaused: "true"}
		e := newEnv(fw, nil)
		Expect(e.reconcile()).To(Equal(reconcile.Result{}))
		Expect(e.provider.Created()).To(BeZero())
		fw = e.firewall()
		Expect(fw.Finalizers).To(BeEmpty())
		Expect(fw.Status.Conditions).To(BeEmpty())
	})

	It("creates no machine for an invalid spec and says why", func() {
		fw := newFirewall()
		fw.Spec.Size = ""
		e := newEnv(fw, nil)
		Expect(e.reconcile()).To(Equal(reconcile.Result{}))
		Expect(e.provider.Created()).To(BeZero())
		Expect(condition(e.firewall(), firewallv1alpha1.ConditionCreated)).To(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", "InvalidSpec"), HaveField("Message", ContainSubstring("spec.size"))))
	})

	It("releases the machine before the finalizer goes", func() {
		e := newEnv(newFirewall(), nil)
		slow := &lingering{Memory: e.provider}
		e.r.Provider = slow
		e.reconcile()
		Expect(e.c.Delete(e.ctx, e.firewall())).To(Succeed())

		Expect(e.reconcile().RequeueAfter).To(BeNumerically(">", 0))
		Expect(slow.requested).To(Equal(e.provider.IDs()))
		fw := e.firewall()
		Expect(fw.Finalizers).To(ContainElement(firewallmachine.Finalizer), "the machine is still there")
		Expect(fw.Status.Phase).To(Equal(firewallv1alpha1.FirewallPhaseDeleting))

		slow.release(e.ctx)
		e.reconcile()
		Expect(apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKeyFromObject(fw), fw))).To(BeTrue())
		Expect(e.provider.IDs()).To(BeEmpty())
		Expect(e.provider.Created()).To(Equal(1))
	})

	It("keeps the machine and the finalizer of a paused Firewall being deleted", func() {
		e := newEnv(newFirewall(), nil)
		e.reconcile()
		e.update(func(fw *firewallv1alpha1.Firewall) {
			fw.Annotations = map[string]string{firewallv1alpha1.AnnotationPaused: "true"}
		})
		Expect(e.c.Delete(e.ctx, e.firewall())).To(Succeed())
		e.reconcile()
		Expect(e.firewall().Finalizers).To(ContainElement(firewallmachine.Finalizer))
		Expect(e.provider.IDs()).To(HaveLen(1))
	})
})
