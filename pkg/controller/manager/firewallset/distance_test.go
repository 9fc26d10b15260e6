package firewallset_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
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
	setDistance := func(d int32) {
		GinkgoHelper()
		Expect(c.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		set.Spec.Distance = d
		Expect(c.Update(ctx, set)).To(Succeed())
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
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"2": 0, "0": 1, "1": 2}))

		By("moving it to the next one when the first is no longer Ready")
		setReady("2", false)
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 0, "1": 1, "2": 2}))

		By("never beyond the longest distance")
		setDistance(firewallv1alpha1.LongestDistance - 1)
		reconcileOnce()
		Expect(distances()).To(Equal(map[string]int32{"0": 7, "1": 8, "2": 8}))
	})
})
