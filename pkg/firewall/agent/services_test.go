package agent

import (
	"log/slog"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ = Describe("serviceAllows", func() {
	lb := func(name string, ranges []string, ips ...string) corev1.Service {
		svc := corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: ranges,
				Ports: []corev1.ServicePort{{Port: 443}, {Protocol: corev1.ProtocolUDP, Port: 53}}},
		}
		for _, ip := range ips {
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
		return svc
	}

	It("allows each address and port, leaving out a Service with an invalid source range rather than opening it to anyone", func() {
		logs := gbytes.NewBuffer()
		allows := serviceAllows([]corev1.Service{
			lb("ok", []string{"203.0.113.0/24"}, "10.0.1.100", "fd00:1::100"),
			lb("broken", []string{"203.0.113.0/33"}, "10.0.1.101"),
			lb("pending", nil),
		}, slog.New(slog.NewTextHandler(logs, nil)))
		var got []string
		for _, a := range allows {
			got = append(got, a.Addr.String())
			Expect(a.Sources).To(HaveLen(1))
		}
		Expect(got).To(Equal([]string{"10.0.1.100", "10.0.1.100", "fd00:1::100", "fd00:1::100"}), "TCP 443 (the default protocol) and UDP 53 on both addresses")
		Expect(allows[0].Proto).To(Equal(uint8(6)))
		Expect(allows[1].Proto).To(Equal(uint8(17)))
		Expect(logs).To(gbytes.Say(`Service left out: invalid loadBalancerSourceRanges" service=default/broken value=203.0.113.0/33`))
	})
})
