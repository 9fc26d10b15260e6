package metricsendpoints

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// maxReported bounds how much of a refused address goes into a log line.
const maxReported = 64

// metricsAddress is the address fw's agent reports, when it is one a
// scrape may go to: a unicast address (no loopback, link-local, multicast
// or unspecified one) and a port.
func metricsAddress(fw *firewallv1alpha1.Firewall) (netip.AddrPort, error) {
	value := reported(fw)
	if value == "" {
		return netip.AddrPort{}, nil
	}
	shown := value
	if len(shown) > maxReported {
		shown = shown[:maxReported] + "..."
	}
	addr, err := netip.ParseAddrPort(value)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("status.agentStatus.metricsAddress %q is no address and port", shown)
	}
	if a := addr.Addr().Unmap(); !a.IsGlobalUnicast() || addr.Port() == 0 || a.Zone() != "" {
		return netip.AddrPort{}, fmt.Errorf("status.agentStatus.metricsAddress %q is no unicast address and port a scrape may go to", shown)
	}
	return netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port()), nil
}

// endpointSlice is the firewall's slice of the metrics Service in the shoot,
// named after the firewall.
func endpointSlice(name string, addr netip.AddrPort) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: constants.ShootNamespace,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: firewallv1alpha1.MetricsServiceName,
				discoveryv1.LabelManagedBy:   constants.EndpointSliceManagedBy,
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{addr.Addr().String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{
			Name: ptr.To(firewallv1alpha1.MetricsPortName), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(int32(addr.Port())),
		}},
	}
	if addr.Addr().Is6() {
		es.AddressType = discoveryv1.AddressTypeIPv6
	}
	return es
}
