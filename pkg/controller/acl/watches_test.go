package acl

import (
	"context"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func cluster(seedSpec, shoot string) *extensionsv1alpha1.Cluster {
	return &extensionsv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "shoot--p--a"},
		Spec: extensionsv1alpha1.ClusterSpec{
			Seed:  &runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Seed","spec":` + seedSpec + `}`)},
			Shoot: runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot",` + shoot + `}`)},
		},
	}
}

var _ = Describe("Cluster predicate", func() {
	const seed = `{"networks":{"nodes":"10.1.0.0/16","pods":"10.2.0.0/16","services":"10.3.0.0/16"},"ingress":{"domain":"ingress.seed.example.com"}}`
	base := cluster(seed, `"spec":{"networking":{"nodes":"10.250.0.0/16"}},"status":{"lastOperation":{"progress":10}}`)
	p := inputsChanged(clusterInputs)

	DescribeTable("follows only what the allow-list depends on",
		func(next *extensionsv1alpha1.Cluster, want bool) {
			Expect(p.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: next})).To(Equal(want))
		},
		Entry("shoot status progress only", cluster(seed, `"spec":{"networking":{"nodes":"10.250.0.0/16"}},"status":{"lastOperation":{"progress":90}}`), false),
		Entry("shoot egress CIDRs", cluster(seed, `"spec":{"networking":{"nodes":"10.250.0.0/16"}},"status":{"networking":{"egressCIDRs":["203.0.113.7/32"]}}`), true),
		Entry("shoot node CIDR", cluster(seed, `"spec":{"networking":{"nodes":"10.251.0.0/16"}}`), true),
		Entry("seed pods", cluster(`{"networks":{"nodes":"10.1.0.0/16","pods":"10.9.0.0/16"},"ingress":{"domain":"ingress.seed.example.com"}}`, `"spec":{"networking":{"nodes":"10.250.0.0/16"}}`), true),
		Entry("seed ingress domain", cluster(`{"networks":{"nodes":"10.1.0.0/16","pods":"10.2.0.0/16"},"ingress":{"domain":"ingress.other.example.com"}}`, `"spec":{"networking":{"nodes":"10.250.0.0/16"}}`), true),
	)

	It("counts a new Cluster, not a deleted one", func() {
		Expect(p.Create(event.CreateEvent{Object: base})).To(BeTrue())
		Expect(p.Delete(event.DeleteEvent{Object: base})).To(BeFalse())
	})
})

var _ = Describe("Infrastructure predicate", func() {
	infra := func(egress ...string) *extensionsv1alpha1.Infrastructure {
		i := &extensionsv1alpha1.Infrastructure{}
		i.Status.EgressCIDRs = egress
		return i
	}
	p := inputsChanged(infrastructureInputs)

	It("ignores unchanged egress CIDRs", func() {
		Expect(p.Update(event.UpdateEvent{ObjectOld: infra("198.51.100.0/30"), ObjectNew: infra("198.51.100.0/30")})).To(BeFalse())
	})

	It("follows a new egress CIDR", func() {
		Expect(p.Update(event.UpdateEvent{ObjectOld: infra("198.51.100.0/30"), ObjectNew: infra("198.51.100.0/30", "198.51.100.8/30")})).To(BeTrue())
	})

	It("follows new node networks", func() {
		withNodes := infra("198.51.100.0/30")
		withNodes.Status.Networking = &extensionsv1alpha1.InfrastructureStatusNetworking{Nodes: []string{"10.251.0.0/16"}}
		Expect(p.Update(event.UpdateEvent{ObjectOld: infra("198.51.100.0/30"), ObjectNew: withNodes})).To(BeTrue())
	})
})

var _ = Describe("Gateway Service mapping", func() {
	service := func(namespace string, ports ...int32) *corev1.Service {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: namespace}}
		for _, p := range ports {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Port: p, TargetPort: intstr.FromInt32(p)})
		}
		return svc
	}

	It("follows a change of the ports only", func() {
		p := inputsChanged(gatewayPorts)
		Expect(p.Update(event.UpdateEvent{ObjectOld: service("istio-ingress", 9443, 8443, 8132), ObjectNew: service("istio-ingress", 9443, 8443)})).To(BeTrue())
		Expect(p.Update(event.UpdateEvent{ObjectOld: service("istio-ingress", 9443, 8443), ObjectNew: service("istio-ingress", 9443, 8443)})).To(BeFalse())
	})

	It("maps a gateway's Service to one acl Extension it serves, other namespaces' Services to none", func() {
		a := newTestActuator(Config{}, aclExtension("shoot--p--a", "istio-ingress--zone-a"), aclExtension("shoot--p--b", "istio-ingress"), aclExtension("shoot--p--c", "istio-ingress"))
		toExtension := gatewayServiceToExtension(a.client)
		Expect(toExtension(context.Background(), service("istio-ingress", 8443))).To(ConsistOf(
			Or(Equal(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "shoot--p--b", Name: "acl"}}),
				Equal(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "shoot--p--c", Name: "acl"}}))))
		Expect(toExtension(context.Background(), service("istio-ingress--zone-a", 8443))).To(ConsistOf(
			reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "shoot--p--a", Name: "acl"}}))
		Expect(toExtension(context.Background(), service("istio-ingress--zone-b", 8443))).To(BeEmpty())
		Expect(toExtension(context.Background(), service("shoot--p--a", 8443))).To(BeEmpty())
	})
})
