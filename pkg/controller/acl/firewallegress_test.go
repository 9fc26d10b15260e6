package acl

import (
	"context"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

var _ = Describe("alwaysAllowed and the shoot's firewalls", func() {
	It("always allows the egress IPs of the shoot's own Firewalls, not those of other shoots", func() {
		scheme := runtime.NewScheme()
		Expect(kubernetes.AddSeedSchemeToScheme(scheme)).To(Succeed())
		Expect(firewallv1alpha1.AddToScheme(scheme)).To(Succeed())
		own := &firewallv1alpha1.Firewall{ObjectMeta: metav1.ObjectMeta{Name: "fw", Namespace: "shoot--p--a"}}
		own.Status.EgressIPs = []string{"203.0.113.17", "2001:db8::17", "garbage"}
		other := &firewallv1alpha1.Firewall{ObjectMeta: metav1.ObjectMeta{Name: "fw", Namespace: "shoot--p--b"}}
		other.Status.EgressIPs = []string{"198.51.100.1"}
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(own, other).Build()
		a, err := NewActuator(c, c, Config{})
		Expect(err).NotTo(HaveOccurred())

		got, err := a.(*actuator).alwaysAllowed(context.Background(), "shoot--p--a", &extensionscontroller.Cluster{}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(cidr.Strings(got)).To(Equal([]string{"203.0.113.17/32", "2001:db8::17/128"}))
	})

	It("does not fail where the firewall API is unknown", func() {
		got, err := newTestActuator(Config{AlwaysAllowedCIDRs: []string{"192.0.2.0/28"}}).alwaysAllowed(context.Background(), "shoot--p--a", &extensionscontroller.Cluster{}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(cidr.Strings(got)).To(Equal([]string{"192.0.2.0/28"}))
	})
})
