package shootsource

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// ManagedBy is the endpointslice.kubernetes.io/managed-by of the agent's
// EndpointSlices, so that the EndpointSlice controller leaves them alone.
const ManagedBy = "firewall-agent.metal-firewall.io"

// PublishMetrics writes the firewall's EndpointSlice of the metrics Service:
// addr, or no endpoint when addr is not valid (the metrics are not served).
// It is owned by the FirewallMonitor, so it goes when the firewall's monitor
// is deleted. Call it after Monitor.
func (s *Source) PublishMetrics(ctx context.Context, addr netip.AddrPort) error {
	if s.monitor == nil || s.monitor.UID == "" {
		return errors.New("the FirewallMonitor, owner of the EndpointSlice, was not written yet")
	}
	c, err := s.connect()
	if err != nil {
		return err
	}
	want := endpointSlice(s.monitor, addr)
	have := &discoveryv1.EndpointSlice{}
	err = c.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		if !addr.IsValid() {
			return nil
		}
		if err := c.Create(ctx, want); err != nil {
			return fmt.Errorf("creating EndpointSlice %s: %w", client.ObjectKeyFromObject(want), err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading EndpointSlice %s: %w", client.ObjectKeyFromObject(want), err)
	}
	if !addr.IsValid() {
		want.AddressType, want.Ports = have.AddressType, have.Ports
	}
	if have.AddressType == want.AddressType && equality.Semantic.DeepEqual(have.Endpoints, want.Endpoints) &&
		equality.Semantic.DeepEqual(have.Ports, want.Ports) && equality.Semantic.DeepEqual(have.Labels, want.Labels) &&
		equality.Semantic.DeepEqual(have.OwnerReferences, want.OwnerReferences) {
		return nil
	}
	if have.AddressType != want.AddressType {
		// The address type is immutable: an agent that moved from IPv4 to
		// IPv6 publishes no endpoint rather than a wrong one.
		want.AddressType, want.Endpoints = have.AddressType, nil
	}
	patch := client.MergeFrom(have.DeepCopy())
	have.Labels, have.OwnerReferences, have.Endpoints, have.Ports = want.Labels, want.OwnerReferences, want.Endpoints, want.Ports
	if err := c.Patch(ctx, have, patch); err != nil {
		return fmt.Errorf("updating EndpointSlice %s: %w", client.ObjectKeyFromObject(want), err)
	}
	return nil
}

// endpointSlice is the EndpointSlice of the metrics at addr, named after
// the firewall (its monitor's name).
func endpointSlice(owner *fwv1alpha1.FirewallMonitor, addr netip.AddrPort) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      owner.Name,
			Namespace: owner.Namespace,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: fwv1alpha1.MetricsServiceName,
				discoveryv1.LabelManagedBy:   ManagedBy,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: fwv1alpha1.SchemeGroupVersion.String(), Kind: "FirewallMonitor", Name: owner.Name, UID: owner.UID,
			}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{
			Name: ptr.To(fwv1alpha1.MetricsPortName), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(int32(addr.Port())),
		}},
	}
	if addr.Addr().Is6() {
		es.AddressType = discoveryv1.AddressTypeIPv6
	}
	if addr.IsValid() {
		es.Endpoints = []discoveryv1.Endpoint{{
			Addresses:  []string{addr.Addr().String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}}
	}
	return es
}
