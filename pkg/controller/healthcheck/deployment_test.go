package healthcheck_test

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/healthcheck"
)

var _ = Describe("DeploymentChecker", func() {
	check := func(conditions ...metav1.Condition) (gardencorev1beta1.ConditionStatus, string) {
		scheme := runtime.NewScheme()
		Expect(firewallv1alpha1.AddToScheme(scheme)).To(Succeed())
		b := fake.NewClientBuilder().WithScheme(scheme)
		if conditions != nil {
			b = b.WithObjects(&firewallv1alpha1.FirewallDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: "firewall", Namespace: "shoot--p--s", Generation: 1},
				Status:     firewallv1alpha1.FirewallDeploymentStatus{Conditions: conditions},
			})
		}
		res, err := NewDeploymentChecker(b.Build(), "firewall").Check(context.Background(), types.NamespacedName{Namespace: "shoot--p--s", Name: "firewall"})
		Expect(err).NotTo(HaveOccurred())
		return res.Status, res.Detail
	}
	cond := func(t string, s metav1.ConditionStatus, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Message: msg, ObservedGeneration: 1}
	}

	It("is unhealthy without a deployment", func() {
		status, detail := check()
		Expect(status).To(Equal(gardencorev1beta1.ConditionFalse))
		Expect(detail).To(ContainSubstring("does not exist"))
	})
	It("is healthy when the firewalls are available", func() {
		status, _ := check(cond("Available", "True", "1 of 1"), cond("Progressing", "True", "done"))
		Expect(status).To(Equal(gardencorev1beta1.ConditionTrue))
	})
	It("is progressing while the rollout is within its deadline", func() {
		status, detail := check(cond("Available", "False", "0 of 1 firewalls ready"), cond("Progressing", "True", "set x"))
		Expect(status).To(Equal(gardencorev1beta1.ConditionProgressing))
		Expect(detail).To(ContainSubstring("0 of 1 firewalls ready"))
	})
	It("is unhealthy when the rollout missed its deadline", func() {
		status, detail := check(cond("Available", "False", "0 of 1"), cond("Progressing", "False", "set x not ready after 15m"))
		Expect(status).To(Equal(gardencorev1beta1.ConditionFalse))
		Expect(detail).To(ContainSubstring("not ready after 15m"))
	})
})
