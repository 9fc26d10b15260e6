package acl

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// alwaysAllowed are the CIDRs no shoot can lock out: seed nodes and pods, shoot nodes (spec and
// status, all IP families), the shoot's egress CIDRs (shoot status and Infrastructure status), the
// egress IPs of the shoot's own firewalls (its nodes leave through them) and the operator's; and the
// seed's egress CIDRs when one of the shoot's ingress gateways sits behind a load balancer in ipMode
// Proxy (proxymode.go).
func (a *actuator) alwaysAllowed(ctx context.Context, namespace string, cluster *extensionscontroller.Cluster, ingresses []ingress) ([]netip.Prefix, error) {
	var cidrs []string
	for _, in := range ingresses {
		if in.proxyMode {
			egress, err := a.seedEgressCIDRs(ctx)
			if err != nil {
				return nil, err
			}
			cidrs = append(cidrs, egress...)
			break
		}
	}
	if cluster.Seed != nil {
		n := cluster.Seed.Spec.Networks
		if n.Nodes != nil {
			cidrs = append(cidrs, splitCIDRs(*n.Nodes)...)
		}
		cidrs = append(cidrs, splitCIDRs(n.Pods)...)
	}
	if cluster.Shoot != nil {
		cidrs = append(cidrs, shootCIDRs(cluster.Shoot)...)
	}
	infras := &extensionsv1alpha1.InfrastructureList{}
	if err := a.client.List(ctx, infras, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Infrastructures: %w", err)
	}
	for _, infra := range infras.Items {
		cidrs = append(cidrs, infra.Status.EgressCIDRs...)
		if infra.Status.Networking != nil {
			cidrs = append(cidrs, infra.Status.Networking.Nodes...)
		}
	}
	egress, err := a.firewallEgressIPs(ctx, namespace)
	if err != nil {
		return nil, err
	}
	cidrs = append(cidrs, egress...)
	out := slices.Clone(a.always)
	for _, c := range cidrs {
		p, err := cidr.Parse(strings.TrimSpace(c))
		if err != nil {
			// Not the shoot owner's input: skip what Gardener or a provider wrote in a form we do not know.
			continue
		}
		out = append(out, p)
	}
	return cidr.Merge(out), nil
}

func shootCIDRs(shoot *gardencorev1beta1.Shoot) []string {
	var cidrs []string
	if shoot.Spec.Networking != nil && shoot.Spec.Networking.Nodes != nil {
		cidrs = append(cidrs, splitCIDRs(*shoot.Spec.Networking.Nodes)...)
	}
	if n := shoot.Status.Networking; n != nil {
		cidrs = append(cidrs, n.Nodes...)
		cidrs = append(cidrs, n.EgressCIDRs...)
	}
	return cidrs
}

func splitCIDRs(s string) []string {
	var out []string
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// firewallEgressIPs are the egress IPs the shoot's Firewalls report, as host prefixes. A seed
// without the firewall CRDs (or a scheme without them) has none: the acl never fails for that.
func (a *actuator) firewallEgressIPs(ctx context.Context, namespace string) ([]string, error) {
	fws := &firewallv1alpha1.FirewallList{}
	if err := a.client.List(ctx, fws, client.InNamespace(namespace)); err != nil {
		if meta.IsNoMatchError(err) || runtime.IsNotRegisteredError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing Firewalls: %w", err)
	}
	var out []string
	for _, fw := range fws.Items {
		for _, ip := range fw.Status.EgressIPs {
			if addr, err := netip.ParseAddr(ip); err == nil {
				out = append(out, netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen()).String())
			}
		}
	}
	return out, nil
}
