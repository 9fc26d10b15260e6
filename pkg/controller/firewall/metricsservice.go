package firewall

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// metricsService is the Service the shoot's Prometheus discovers the
// firewalls' metrics by. It has no selector: the extension adds one
// EndpointSlice per firewall with the address its agent reports in the seed
// (package metricsendpoints). The agent writes neither, and the Service
// outlives every single firewall of a rolling update.
func metricsService() *corev1.Service {
	port := int32(firewallv1alpha1.MetricsServicePort)
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:      firewallv1alpha1.MetricsServiceName,
			Namespace: constants.ShootNamespace,
			Labels:    map[string]string{"app.kubernetes.io/name": "firewall-agent", "app.kubernetes.io/component": "metrics"},
			Annotations: map[string]string{
				"prometheus.io/scrape": "true",
				"prometheus.io/port":   strconv.Itoa(int(port)),
				"prometheus.io/path":   "/metrics",
				"prometheus.io/scheme": "http",
			},
		},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{{
				Name: firewallv1alpha1.MetricsPortName, Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(port),
			}},
		},
	}
}
