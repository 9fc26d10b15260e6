package acl

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	istionetworkingv1beta1 "istio.io/client-go/pkg/apis/networking/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// kubeAPIServerGatewayPrefix starts the names of the shoot's kube-apiserver Gateways
// (kube-apiserver, kube-apiserver-wildcard).
const kubeAPIServerGatewayPrefix = "kube-apiserver"

// ingress is one Istio ingress namespace that serves the shoot's kube-apiserver.
type ingress struct {
	namespace string
	selector  map[string]string
	hosts     []string
	// proxyMode: a Service of the gateway has a load balancer in ipMode Proxy (proxymode.go).
	proxyMode bool
	// targetPorts are the ports the gateway's Services target (nil without a Service).
	targetPorts []int32
}

// ingresses finds the Istio ingress namespaces that serve the shoot's kube-apiserver and
// observability Gateways: the namespaces of the Services that a Gateway's selector matches
// (default istio-ingress, zonal istio-ingress--<zone>, exposure classes), with the hosts each
// serves there.
func (a *actuator) ingresses(ctx context.Context, namespace, ingressDomain string) ([]ingress, error) {
	gateways := &istionetworkingv1beta1.GatewayList{}
	if err := a.client.List(ctx, gateways, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Gateways: %w", err)
	}
	byNamespace := map[string]*ingress{}
	for _, gw := range gateways.Items {
		if len(gw.Spec.Selector) == 0 {
			continue
		}
		hosts := gatewayHosts(gw, ingressDomain)
		if len(hosts) == 0 && !strings.HasPrefix(gw.Name, kubeAPIServerGatewayPrefix) {
			continue
		}
		services := &corev1.ServiceList{}
		if err := a.client.List(ctx, services, client.MatchingLabels(gw.Spec.Selector)); err != nil {
			return nil, fmt.Errorf("listing ingress gateway Services: %w", err)
		}
		namespaces := []string{}
		proxied := map[string]bool{}
		ports := map[string][]int32{}
		for i := range services.Items {
			svc := &services.Items[i]
			namespaces = append(namespaces, svc.Namespace)
			proxied[svc.Namespace] = proxied[svc.Namespace] || proxyMode(svc)
			ports[svc.Namespace] = append(ports[svc.Namespace], targetPorts(svc)...)
		}
		if len(namespaces) == 0 {
			namespaces = append(namespaces, constants.DefaultIngressNamespace)
		}
		for _, ns := range namespaces {
			in := byNamespace[ns]
			if in == nil {
				in = &ingress{namespace: ns, selector: gw.Spec.Selector}
				byNamespace[ns] = in
			}
			in.hosts = append(in.hosts, hosts...)
			in.proxyMode = in.proxyMode || proxied[ns]
			in.targetPorts = append(in.targetPorts, ports[ns]...)
		}
	}
	var out []ingress
	for _, in := range byNamespace {
		sort.Strings(in.hosts)
		in.hosts = slices.Compact(in.hosts)
		out = append(out, *in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].namespace < out[j].namespace })
	return out, nil
}

// gatewayListeners are the HTTP-CONNECT listeners of the ingress gateway in the namespace, from
// the ports its Services target (envoy.GatewayListeners): without the legacy VPN port once
// gardenlet's RemoveHTTPProxyLegacyPort removed it. A gateway without shoots has no selector and
// gets nothing deployed: any answer does.
func (a *actuator) gatewayListeners(ctx context.Context, namespace string, selector map[string]string) ([]envoy.HTTPConnectListener, error) {
	if len(selector) == 0 {
		return envoy.HTTPConnectListeners, nil
	}
	services := &corev1.ServiceList{}
	if err := a.client.List(ctx, services, client.InNamespace(namespace), client.MatchingLabels(selector)); err != nil {
		return nil, fmt.Errorf("listing the ingress gateway Services of %s: %w", namespace, err)
	}
	var ports []int32
	for i := range services.Items {
		ports = append(ports, targetPorts(&services.Items[i])...)
	}
	return envoy.GatewayListeners(ports), nil
}

// targetPorts are the ports a Service sends to on the gateway's pods: Istio's listeners.
func targetPorts(svc *corev1.Service) []int32 {
	var out []int32
	for _, p := range svc.Spec.Ports {
		target := p.Port
		if p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal != 0 {
			target = p.TargetPort.IntVal
		}
		out = append(out, target)
	}
	return out
}

// listenerPorts says which HTTP-CONNECT listeners a rebuild patched, to tell when a gateway's
// changed.
func listenerPorts(listeners []envoy.HTTPConnectListener) string {
	var s strings.Builder
	for _, l := range listeners {
		fmt.Fprintf(&s, "%d,", l.Port)
	}
	return s.String()
}

// gatewayHosts are the hosts of a Gateway in the shoot namespace that the shoot's policy covers:
// every concrete host of the kube-apiserver Gateways, and the concrete hosts on the seed's ingress
// domain of any other Gateway (the observability components: gu-, p-, au-, v-, otc-<project>--<shoot>).
// Wildcard hosts are left out: their filter chain may be shared with other shoots.
func gatewayHosts(gw *istionetworkingv1beta1.Gateway, ingressDomain string) []string {
	apiserver := strings.HasPrefix(gw.Name, kubeAPIServerGatewayPrefix)
	var hosts []string
	for _, s := range gw.Spec.Servers {
		for _, h := range s.Hosts {
			// A Gateway host may carry a namespace ("ns/host"); the SNI is the part after it.
			if i := strings.LastIndex(h, "/"); i >= 0 {
				h = h[i+1:]
			}
			if h == "" || strings.Contains(h, "*") {
				continue
			}
			if apiserver || (ingressDomain != "" && strings.HasSuffix(h, "."+ingressDomain)) {
				hosts = append(hosts, h)
			}
		}
	}
	return hosts
}

// seedIngressDomain is the seed's wildcard ingress domain (ingress.<seed domain>), under which
// Gardener exposes the shoot's observability components; empty if the seed has none.
func seedIngressDomain(seed *gardencorev1beta1.Seed) string {
	if seed == nil || seed.Spec.Ingress == nil {
		return ""
	}
	return strings.TrimPrefix(seed.Spec.Ingress.Domain, "*.")
}

func ingressNamespaces(ingresses []ingress) []string {
	var out []string
	for _, in := range ingresses {
		out = append(out, in.namespace)
	}
	return out
}
