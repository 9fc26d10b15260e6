package acl

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	istioapinetworkingv1beta1 "istio.io/api/networking/v1beta1"
	istionetworkingv1beta1 "istio.io/client-go/pkg/apis/networking/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

func gateway(namespace, name string, selector map[string]string, hosts ...string) *istionetworkingv1beta1.Gateway {
	gw := &istionetworkingv1beta1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	gw.Spec.Selector = selector
	gw.Spec.Servers = []*istioapinetworkingv1beta1.Server{{Hosts: hosts}}
	return gw
}

var _ = Describe("ingresses", func() {
	def := map[string]string{"istio": "ingressgateway"}
	zonal := map[string]string{"istio": "ingressgateway--zone--b"}
	var a *actuator

	BeforeEach(func() {
		a = newTestActuator(Config{},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: "istio-ingress", Labels: def}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: "istio-ingress--zone-b", Labels: zonal}},
			gateway("shoot--p--a", "kube-apiserver", zonal, "api.a.example.com", "api.a.internal.example.com"),
			gateway("shoot--p--a", "kube-apiserver-wildcard", def, "*.seed.example.com", "api--a.seed.example.com"),
			gateway("shoot--p--a", "vpn", def, "vpn.a.example.com"),
			// The observability components, as Gardener exposes them on the seed's ingress domain.
			gateway("shoot--p--a", "plutono-shoot--p--a", def, "gu-p--a.ingress.seed.example.com"),
			gateway("shoot--p--a", "prometheus-shoot", def, "istio-ingress/p-p--a.ingress.seed.example.com"),
			// Neither a wildcard nor a host off the ingress domain of a Gateway that is not the kube-apiserver's.
			gateway("shoot--p--a", "some-extension", def, "*.ingress.seed.example.com", "x.example.org", "x.ingress.seed.example.com.evil.org"),
			gateway("shoot--p--b", "kube-apiserver", map[string]string{"istio": "unknown"}, "api.b.example.com"),
		)
	})

	It("finds the namespaces of the Services the kube-apiserver Gateways select, with their concrete hosts", func() {
		got, err := a.ingresses(context.Background(), "shoot--p--a", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(ingressNamespaces(got)).To(Equal([]string{"istio-ingress", "istio-ingress--zone-b"}))
		Expect(got[0].hosts).To(Equal([]string{"api--a.seed.example.com"}))
		Expect(got[1].hosts).To(Equal([]string{"api.a.example.com", "api.a.internal.example.com"}))
	})

	It("counts the observability hosts on the seed's ingress domain", func() {
		got, err := a.ingresses(context.Background(), "shoot--p--a", "ingress.seed.example.com")
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(HaveLen(2))
		Expect(got[0].hosts).To(Equal([]string{"api--a.seed.example.com", "gu-p--a.ingress.seed.example.com", "p-p--a.ingress.seed.example.com"}))
		Expect(got[1].selector).To(HaveKeyWithValue("istio", "ingressgateway--zone--b"))
	})

	It("falls back to the default ingress namespace when no Service matches", func() {
		got, err := a.ingresses(context.Background(), "shoot--p--b", "ingress.seed.example.com")
		Expect(err).NotTo(HaveOccurred())
		Expect(ingressNamespaces(got)).To(Equal([]string{constants.DefaultIngressNamespace}))
	})
})

var _ = Describe("seedIngressDomain", func() {
	It("is empty without a seed", func() {
		Expect(seedIngressDomain(nil)).To(BeEmpty())
	})

	It("is the seed's ingress domain", func() {
		seed := &gardencorev1beta1.Seed{Spec: gardencorev1beta1.SeedSpec{Ingress: &gardencorev1beta1.Ingress{Domain: "ingress.seed.example.com"}}}
		Expect(seedIngressDomain(seed)).To(Equal("ingress.seed.example.com"))
	})
})
