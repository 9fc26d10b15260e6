package acl

import (
	"context"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

var _ = Describe("seed egress behind a load balancer in ipMode Proxy", func() {
	labels := map[string]string{"istio": "ingressgateway"}
	service := func(mode corev1.LoadBalancerIPMode) *corev1.Service {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: "istio-ingress", Labels: labels}}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.0.1", IPMode: ptr.To(mode)}}
		return svc
	}
	shootInfo := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shoot-info", Namespace: "kube-system"},
		Data: map[string]string{"egressCIDRs": "198.51.100.16/28,2001:db8:e::/48"}}
	alwaysOf := func(a *actuator) []string {
		GinkgoHelper()
		ingresses, err := a.ingresses(context.Background(), "shoot--p--a", "")
		Expect(err).NotTo(HaveOccurred())
		got, err := a.alwaysAllowed(context.Background(), "shoot--p--a", &extensionscontroller.Cluster{}, ingresses)
		Expect(err).NotTo(HaveOccurred())
		return cidr.Strings(got)
	}

	It("allows a ManagedSeed's egress CIDRs (shoot-info) and the operator's when the gateway's load balancer is in Proxy mode", func() {
		a := newTestActuator(Config{SeedEgressCIDRs: []string{"203.0.113.64/27"}}, service(corev1.LoadBalancerIPModeProxy), shootInfo,
			gateway("shoot--p--a", "kube-apiserver", labels, "api.a.example.com"))
		Expect(alwaysOf(a)).To(ConsistOf("198.51.100.16/28", "2001:db8:e::/48", "203.0.113.64/27"))
	})

	It("adds nothing in ipMode VIP: in-seed traffic keeps its pod or node address", func() {
		a := newTestActuator(Config{SeedEgressCIDRs: []string{"203.0.113.64/27"}}, service(corev1.LoadBalancerIPModeVIP), shootInfo,
			gateway("shoot--p--a", "kube-apiserver", labels, "api.a.example.com"))
		Expect(alwaysOf(a)).To(BeEmpty())
	})

	It("takes the operator's CIDRs alone on a seed that is no ManagedSeed", func() {
		a := newTestActuator(Config{SeedEgressCIDRs: []string{"203.0.113.64/27"}}, service(corev1.LoadBalancerIPModeProxy),
			gateway("shoot--p--a", "kube-apiserver", labels, "api.a.example.com"))
		Expect(alwaysOf(a)).To(ConsistOf("203.0.113.64/27"))
	})

	It("refuses a bad operator CIDR", func() {
		_, err := NewActuator(nil, nil, Config{SeedEgressCIDRs: []string{"203.0.113.0/40"}})
		Expect(err).To(MatchError(ContainSubstring(`operator's seed egress CIDR "203.0.113.0/40"`)))
	})
})
