package framework

import (
	"context"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	istioapinetworkingv1beta1 "istio.io/api/networking/v1beta1"
	istionetworkingv1beta1 "istio.io/client-go/pkg/apis/networking/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IngressNamespace is the seed's default Istio ingress namespace.
const IngressNamespace = "istio-ingress"

// IngressGatewayLabels select the seed's Istio ingress gateway.
var IngressGatewayLabels = map[string]string{"app": "istio-ingressgateway", "istio": "ingressgateway"}

// CreateIngressGateway creates what a seed has of its shared Istio ingress
// gateway and what the acl extension looks at: the namespace and the
// gateway's Service with its TLS, HTTP-CONNECT and legacy VPN ports. No
// Istio runs: the EnvoyFilters are generated, not loaded into an Envoy.
func CreateIngressGateway(ctx context.Context, c client.Client) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   IngressNamespace,
		Labels: map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleIstioIngress},
	}}); err != nil {
		return err
	}
	return c.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: IngressNamespace, Labels: IngressGatewayLabels},
		Spec: corev1.ServiceSpec{Selector: IngressGatewayLabels, Ports: []corev1.ServicePort{
			{Name: "tls-tunnel", Port: 8132, TargetPort: intstr.FromInt32(8132)},
			{Name: "https", Port: 443, TargetPort: intstr.FromInt32(9443)},
			{Name: "http-connect", Port: 8443, TargetPort: intstr.FromInt32(8443)},
		}},
	})
}

// CreateKubeAPIServerGateway creates the shoot's kube-apiserver Gateway in
// its namespace, as Gardener does: TLS passthrough for the API hosts on the
// seed's ingress gateway.
func CreateKubeAPIServerGateway(ctx context.Context, c client.Client, namespace string, hosts ...string) error {
	gw := &istionetworkingv1beta1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver", Namespace: namespace}}
	gw.Spec.Selector = IngressGatewayLabels
	gw.Spec.Servers = []*istioapinetworkingv1beta1.Server{{
		Port:  &istioapinetworkingv1beta1.Port{Number: 443, Name: "tls", Protocol: "TLS"},
		Hosts: hosts,
		Tls:   &istioapinetworkingv1beta1.ServerTLSSettings{Mode: istioapinetworkingv1beta1.ServerTLSSettings_PASSTHROUGH},
	}}
	return c.Create(ctx, gw)
}
