package acl

import (
	"context"
	"fmt"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// shootInfoEgressCIDRs is the key of the shoot-info ConfigMap that Gardener writes into a shoot's
// kube-system: on a ManagedSeed (a seed that is itself a shoot), the seed's own egress CIDRs.
const shootInfoEgressCIDRs = "egressCIDRs"

// proxyMode tells whether a load balancer in front of the ingress gateway reports ipMode Proxy.
// Then traffic from inside the seed to the gateway's address leaves the seed and comes back
// through the load balancer: the gateway sees the seed's egress address, not a pod or node
// address, and a shoot's ACL would lock out the seed's own components (gardenlet, the shoot's
// control plane reaching its kube-apiserver by its public name).
func proxyMode(svc *corev1.Service) bool {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IPMode != nil && *in.IPMode == corev1.LoadBalancerIPModeProxy {
			return true
		}
	}
	return false
}

// seedEgressCIDRs are the seed's egress CIDRs, always allowed when an ingress gateway of the
// shoot runs behind a load balancer in ipMode Proxy: the operator's (--acl-seed-egress-cidrs)
// and, on a ManagedSeed, those Gardener reports in kube-system/shoot-info (as the upstream ACL
// extension reads them).
func (a *actuator) seedEgressCIDRs(ctx context.Context) ([]string, error) {
	out := append([]string{}, a.config.SeedEgressCIDRs...)
	cm := &corev1.ConfigMap{}
	// Read around the cache: one object, and no informer on every ConfigMap of the seed.
	if err := a.reader.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: v1beta1constants.ConfigMapNameShootInfo}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			// Not a ManagedSeed: only what the operator configured.
			return out, nil
		}
		return nil, fmt.Errorf("reading the seed's egress CIDRs from %s/%s: %w", metav1.NamespaceSystem, v1beta1constants.ConfigMapNameShootInfo, err)
	}
	return append(out, splitCIDRs(cm.Data[shootInfoEgressCIDRs])...), nil
}
