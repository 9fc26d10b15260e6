package firewallset_test

import (
	"context"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/managertest"
)

var _ = Describe("Distances", func() {
	var (
		ctx context.Context
		c   client.Client
		r   *firewallset.Reconciler
		set *firewallv1alpha1.FirewallSet
	)
	BeforeEach(func() {
		ctx = context.Background()
		clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		c = managertest.NewClient(clk, interceptor.Funcs{})
		r = &firewallset.Reconciler{Client: c, Clock: clk, HealthTimeout: healthTimeout}
		set = newSet()
		set.Spec.Replicas = 3
		set.Spec.Distance = firewallv1alpha1.RollingUpdateDistance
		Expect(c.Create(ctx, set)).To(Succeed())
	})
	reconcileOnce := func() {
		GinkgoHelper()
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(set)})
		Expect(err).NotTo(HaveOccurred())
	}
	// distances maps the set's Firewalls (by their index) to their distance.
	distances := func() map[string]int32 {
		GinkgoHelper()
		list := &firewallv1alpha1.FirewallList{}
		Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		out := map[string]int32{}
		for _, fw := range list.Items {
			out[fw.Name[len(set.Name)+1:]] = fw.Spec.Distance
		}
		return out
	}
	setReady := func(index string, ok bool) {
		GinkgoHelper()
		fw := &firewallv1alpha1.Firewall{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: set.Name + "-" + index}, fw)).To(Succeed())
		patch := client.MergeFrom(fw.DeepCopy())
		status := metav1.ConditionTrue
		if !ok {
			status = metav1.ConditionFalse
		}
		meta.SetStatusCondition(&fw.Status.Conditions, metav1.Condition{Type: firewallv1alpha1.ConditionReady, Status: status, Reason: "Test"})
		Expect(c.Status().Patch(ctx, fw, patch)).To(Succeed())
	}
	// report plays the agents: each announces the distance it was given.
	report := func() {
		GinkgoHelper()
		list := &firewallv1alpha1.FirewallList{}
		Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		for i := range list.Items {
			fw := &list.Items[i]
			patch := client.MergeFrom(fw.DeepCopy())
			fw.Status.AgentStatus = &firewallv1alpha1.AgentStatus{LastRunAgainstSeed: &metav1.Time{Time: time.Now()}, DistanceSupported: true, Distance: ptr.To(fw.Spec.Distance)}
			Expect(c.Status().Patch(ctx, fw, patch)).To(Succeed())
		}
	}
	setDistance := func(d int32) {
		GinkgoHelper()
		Expect(c.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		set.Spec.Distance = d
		Expect(c.Update(ctx, set)).To(Succeed())
	}
	// settled makes a set at the shortest distance with n firewalls, all
	// Ready and announcing what they were given.
	settled := func(n int) {
		GinkgoHelper()
		setDistance(firewallv1alpha1.ShortestDistance)
		Expect(c.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		set.Spec.Replicas = int32(n)
		Expect(c.Update(ctx, set)).To(Succeed())
		reconcileOnce()
		for i := range n {
			setReady(strconv.Itoa(i), true)
		}
		report()
		reconcileOnce()
	}

	It("gives the most important Firewall the set's distance, the next one more, the rest two more, at most the longest", func() {
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 3, "1": 4, "2": 5}), "new Firewalls rank in creation order")

		By("putting the first Ready one first")
		setReady("2", true)
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"2": 3, "0": 4, "1": 5}))

		By("following the set's distance")
		setDistance(firewallv1alpha1.ShortestDistance)
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"2": 0, "0": 1, "1": 2}))

		By("keeping the traffic where it is when all are Ready")
		setReady("0", true)
		setReady("1", true)
		report()
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"2": 0, "0": 1, "1": 2}))

		By("moving it to the next one when the first is no longer Ready, one firewall at a time")
		setReady("2", false)
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 0, "1": 2, "2": 3}), "1 waits while 0 resets its sessions")
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 0, "1": 2, "2": 3}), "0 has not announced its distance yet")
		report()
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 0, "1": 1, "2": 2}))

		By("never beyond the longest distance")
		setDistance(firewallv1alpha1.LongestDistance - 1)
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 7, "1": 8, "2": 8}))
	})
	It("keeps a lone survivor's distance until another firewall can carry the traffic", func() {
		settled(2)
		Expect(distances()).To(Equal(map[string]int32{"0": 0, "1": 1}))

		By("deleting the firewall that carries")
		first := &firewallv1alpha1.Firewall{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: set.Name + "-0"}, first)).To(Succeed())
		first.Finalizers = append(first.Finalizers, "test/hold")
		Expect(c.Update(ctx, first)).To(Succeed())
		Expect(c.Delete(ctx, first)).To(Succeed())
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 0, "1": 1, "2": 2}),
			"the survivor keeps 1 (no reset while it carries alone), its replacement comes in behind it")

		By("moving the survivor once its replacement is Ready and announces its distance")
		setReady("2", true)
		reconcileOnce()
		Expect(distances()).To(HaveKeyWithValue("1", int32(1)), "the replacement has not announced its distance")
		report()
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 0, "1": 0, "2": 2}), "the replacement waits while the survivor resets")
		report()
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 0, "1": 0, "2": 1}))
	})

	It("moves a lone Ready firewall at once when a failed one may still attract the traffic", func() {
		settled(2)
		Expect(distances()).To(Equal(map[string]int32{"0": 0, "1": 1}))

		setReady("0", false)
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 1, "1": 0}), "no other firewall carries, but 0 announces a shorter distance")
	})

	It("lets another set's firewall carry the traffic, and moves a lone one from the rolling distance", func() {
		settled(1)
		Expect(distances()).To(Equal(map[string]int32{"0": 0}))

		By("a lone firewall at 1 keeps it")
		update := func(d int32) {
			GinkgoHelper()
			fw := &firewallv1alpha1.Firewall{}
			Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: set.Name + "-0"}, fw)).To(Succeed())
			fw.Spec.Distance = d
			Expect(c.Update(ctx, fw)).To(Succeed())
			report()
		}
		update(1)
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 1}))

		By("another set's Ready firewall that announces its distance carries meanwhile")
		other := &firewallv1alpha1.Firewall{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: set.Name + "-9"}, Spec: firewallv1alpha1.FirewallSpec{Distance: firewallv1alpha1.LongestDistance}}
		Expect(c.Create(ctx, other)).To(Succeed())
		setReady("9", true)
		report()
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 0, "9": firewallv1alpha1.LongestDistance}))

		By("a lone firewall at the rolling distance takes the shortest, where a rolling set would tie with it")
		Expect(c.Delete(ctx, other)).To(Succeed())
		update(firewallv1alpha1.RollingUpdateDistance)
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 0}))
	})
})
