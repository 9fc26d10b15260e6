package firewall

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

var _ = Describe("forwarding", func() {
	const ns = "shoot--p--s"
	var (
		d    *firewallv1alpha1.FirewallDeployment
		set  firewallv1alpha1.FirewallSet
		fw   firewallv1alpha1.Firewall
		sets []firewallv1alpha1.FirewallSet
	)
	setLabels := map[string]string{"firewall.metal-firewall.io/deployment": "firewall", firewallv1alpha1.LabelTemplateHash: "abc"}
	traffic := firewallv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.0.0/8"}}
	cond := func(t string, ok bool) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: s, Reason: t, Message: "says the manager"}
	}
	// forwardingFirewall is a Firewall that forwards with generation gen's rules.
	forwardingFirewall := func(name string, gen int64) firewallv1alpha1.Firewall {
		return firewallv1alpha1.Firewall{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Generation: gen, Labels: setLabels},
			Spec:       firewallv1alpha1.FirewallSpec{FirewallTrafficSpec: traffic},
			Status: firewallv1alpha1.FirewallStatus{
				Conditions:  []metav1.Condition{cond(firewallv1alpha1.ConditionReady, true), cond(firewallv1alpha1.ConditionSeedConnected, true), cond(firewallv1alpha1.ConditionConnected, true)},
				AgentStatus: &firewallv1alpha1.AgentStatus{AppliedGeneration: gen},
			},
		}
	}
	BeforeEach(func() {
		d = &firewallv1alpha1.FirewallDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: "firewall", Namespace: ns, Generation: 3},
			Spec: firewallv1alpha1.FirewallDeploymentSpec{Replicas: 1, Selector: map[string]string{"firewall.metal-firewall.io/deployment": "firewall"},
				Template: firewallv1alpha1.FirewallTemplateSpec{Spec: firewallv1alpha1.FirewallSpec{FirewallTrafficSpec: traffic}}},
			Status: firewallv1alpha1.FirewallDeploymentStatus{ObservedGeneration: 3, ObservedRevision: 2},
		}
		set = firewallv1alpha1.FirewallSet{
			ObjectMeta: metav1.ObjectMeta{Name: "firewall-abc", Namespace: ns, Generation: 4, Labels: setLabels,
				Annotations: map[string]string{firewallv1alpha1.AnnotationRevision: "2"}},
			Spec: firewallv1alpha1.FirewallSetSpec{Selector: setLabels,
				Template: firewallv1alpha1.FirewallTemplateSpec{Spec: firewallv1alpha1.FirewallSpec{FirewallTrafficSpec: traffic}}},
			Status: firewallv1alpha1.FirewallSetStatus{ObservedGeneration: 4},
		}
		fw = forwardingFirewall("firewall-abc-0", 2)
		sets = []firewallv1alpha1.FirewallSet{set}
	})

	It("is true once the newest set's firewall is Ready, connected to seed and shoot, and has its spec in force", func() {
		ok, why := forwarding(d, sets, []firewallv1alpha1.Firewall{fw})
		Expect(why).To(BeEmpty())
		Expect(ok).To(BeTrue())
	})

	DescribeTable("names the firewall and what is missing",
		func(mutate func(), want ...string) {
			mutate()
			ok, why := forwarding(d, sets, []firewallv1alpha1.Firewall{fw})
			Expect(ok).To(BeFalse())
			for _, w := range want {
				Expect(why).To(ContainSubstring(w))
			}
		},
		Entry("the manager has not seen the deployment's spec", func() { d.Status.ObservedGeneration = 2 },
			"FirewallDeployment shoot--p--s/firewall: generation 3 not yet observed"),
		Entry("no set of the observed revision", func() { d.Status.ObservedRevision = 3 }, "no FirewallSet of revision 3 yet"),
		Entry("the set of an older revision only", func() { sets[0].Annotations[firewallv1alpha1.AnnotationRevision] = "1" }, "no FirewallSet of revision 2"),
		Entry("the set has not passed its template on", func() { sets[0].Status.ObservedGeneration = 3 }, "FirewallSet firewall-abc: generation 4 not yet observed"),
		Entry("not Ready", func() { meta.SetStatusCondition(&fw.Status.Conditions, cond(firewallv1alpha1.ConditionReady, false)) },
			"0 of 1 firewalls of FirewallSet firewall-abc forward with their rules", "firewall shoot--p--s/firewall-abc-0: Ready=False (says the manager)"),
		Entry("the agent does not reach the shoot", func() {
			meta.SetStatusCondition(&fw.Status.Conditions, cond(firewallv1alpha1.ConditionConnected, false))
		},
			"firewall shoot--p--s/firewall-abc-0: Connected=False"),
		Entry("no conditions at all", func() { fw.Status.Conditions = nil },
			"Ready not reported yet, SeedConnected not reported yet, Connected not reported yet"),
		Entry("the agent has an older spec in force", func() {
			fw.Generation = 3
			fw.Status.AgentStatus.Message = "the kernel refused the batch"
		}, "rules of generation 3 not applied (agent has 2 in force): the kernel refused the batch"),
		Entry("no agent status", func() { fw.Status.AgentStatus = nil }, "no agent status"),
		Entry("the deployment's rules not yet on the set (its cache lags the deployment's)", func() { d.Spec.Template.Spec.InternalPrefixes = []string{"10.1.0.0/16"} },
			"FirewallSet firewall-abc: the deployment's current rules not yet passed to it"),
		Entry("the set's rules not yet on the Firewall", func() {
			d.Spec.Template.Spec.InternalPrefixes = []string{"10.1.0.0/16"}
			sets[0].Spec.Template.Spec.InternalPrefixes = []string{"10.1.0.0/16"}
		}, "the set's current rules not yet passed to the Firewall"),
		Entry("the set replacing it says so", func() {
			fw.Status.Conditions = nil
			sets[0].Status.Conditions = []metav1.Condition{{Type: firewallv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: "ReplacementLimitReached", Message: "gave up after 3 replacements"}}
		}, "(ReplacementLimitReached: gave up after 3 replacements)"),
	)

	It("needs only Ready for a firewall whose agent cannot reach the seed", func() {
		fw.Annotations = map[string]string{firewallv1alpha1.AnnotationNoControllerConnection: "true"}
		fw.Status.AgentStatus = nil
		fw.Status.Conditions = []metav1.Condition{cond(firewallv1alpha1.ConditionReady, true)}
		Expect(forwarding(d, sets, []firewallv1alpha1.Firewall{fw})).To(BeTrue())
	})

	It("counts firewalls of the newest set only, and enough of them, while a failed one waits for its replacement", func() {
		d.Spec.Replicas = 2
		failed := forwardingFirewall("firewall-abc-1", 2)
		failed.Status.Conditions = nil
		old := forwardingFirewall("firewall-old-0", 2)
		old.Labels = map[string]string{"firewall.metal-firewall.io/deployment": "firewall", firewallv1alpha1.LabelTemplateHash: "old"}
		ok, why := forwarding(d, sets, []firewallv1alpha1.Firewall{fw, failed, old})
		Expect(ok).To(BeFalse())
		Expect(why).To(HavePrefix("1 of 2 firewalls"))
		Expect(why).NotTo(ContainSubstring("firewall-old-0"))

		replacement := forwardingFirewall("firewall-abc-2", 2)
		Expect(forwarding(d, sets, []firewallv1alpha1.Firewall{fw, failed, old, replacement})).To(BeTrue())
	})

	It("lists a bounded number of firewalls", func() {
		d.Spec.Replicas = 20
		var fws []firewallv1alpha1.Firewall
		for i := range 20 {
			f := forwardingFirewall(fmt.Sprintf("firewall-abc-%02d", i), 2)
			f.Status.AgentStatus = nil
			fws = append(fws, f)
		}
		_, why := forwarding(d, sets, fws)
		Expect(why).To(ContainSubstring("and 15 more"))
		Expect(len(why)).To(BeNumerically("<", 1024))
	})
})
