package acl

import (
	"context"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

var _ = Describe("alwaysAllowed", func() {
	It("merges the seed's, the shoot's, the Infrastructure's and the operator's CIDRs, skipping what does not parse", func() {
		infra := &extensionsv1alpha1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "infra", Namespace: "shoot--p--a"}}
		infra.Status.EgressCIDRs = []string{"198.51.100.0/30", "not-a-cidr"}
		infra.Status.Networking = &extensionsv1alpha1.InfrastructureStatusNetworking{Nodes: []string{"10.251.0.0/16"}}
		a := newTestActuator(Config{AlwaysAllowedCIDRs: []string{"192.0.2.0/28"}}, infra)

		cluster := &extensionscontroller.Cluster{
			Seed: &gardencorev1beta1.Seed{Spec: gardencorev1beta1.SeedSpec{Networks: gardencorev1beta1.SeedNetworks{
				Nodes: ptr.To("10.1.0.0/16,fd00:1::/64"), Pods: "10.2.0.0/16",
			}}},
			Shoot: &gardencorev1beta1.Shoot{
				Spec: gardencorev1beta1.ShootSpec{Networking: &gardencorev1beta1.Networking{Nodes: ptr.To("10.250.0.0/16")}},
				Status: gardencorev1beta1.ShootStatus{Networking: &gardencorev1beta1.NetworkingStatus{
					Nodes: []string{"10.250.0.0/16", "2001:db8:250::/64"}, EgressCIDRs: []string{"203.0.113.7/32"},
				}},
			},
		}
		got, err := a.alwaysAllowed(context.Background(), "shoot--p--a", cluster, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(cidr.Strings(got)).To(Equal([]string{"10.1.0.0/16", "10.2.0.0/16", "10.250.0.0/16", "10.251.0.0/16", "192.0.2.0/28", "198.51.100.0/30", "203.0.113.7/32", "2001:db8:250::/64", "fd00:1::/64"}))
	})
})
