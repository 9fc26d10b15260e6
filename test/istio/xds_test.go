package istio_test

import (
	"context"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"
	istioapinetworkingv1beta1 "istio.io/api/networking/v1beta1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	istionetworkingv1beta1 "istio.io/client-go/pkg/apis/networking/v1beta1"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/networking/core"
	"istio.io/istio/pkg/config"
	"istio.io/istio/pkg/config/schema/gvk"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
)

// istioConfigs are the seed's Istio networking objects as istiod reads them, plus a
// ServiceEntry per Service that the gateways and routes refer to (the fake config generator has
// no Kubernetes service registry).
func (s *seed) istioConfigs(ctx context.Context) []config.Config {
	GinkgoHelper()
	var out []config.Config
	add := func(k config.GroupVersionKind, m metav1.ObjectMeta, spec config.Spec) {
		out = append(out, config.Config{Meta: config.Meta{GroupVersionKind: k, Name: m.Name, Namespace: m.Namespace, Labels: m.Labels,
			Annotations: m.Annotations, CreationTimestamp: m.CreationTimestamp.Time, ResourceVersion: m.ResourceVersion}, Spec: spec})
	}
	gws := &istionetworkingv1beta1.GatewayList{}
	Expect(s.client.List(ctx, gws)).To(Succeed())
	for _, o := range gws.Items {
		add(gvk.Gateway, o.ObjectMeta, &o.Spec)
	}
	vss := &istionetworkingv1beta1.VirtualServiceList{}
	Expect(s.client.List(ctx, vss)).To(Succeed())
	for _, o := range vss.Items {
		add(gvk.VirtualService, o.ObjectMeta, &o.Spec)
	}
	drs := &istionetworkingv1beta1.DestinationRuleList{}
	Expect(s.client.List(ctx, drs)).To(Succeed())
	for _, o := range drs.Items {
		add(gvk.DestinationRule, o.ObjectMeta, &o.Spec)
	}
	efs := &istionetworkingv1alpha3.EnvoyFilterList{}
	Expect(s.client.List(ctx, efs)).To(Succeed())
	for _, o := range efs.Items {
		add(gvk.EnvoyFilter, o.ObjectMeta, &o.Spec)
	}
	for _, gw := range s.gateways {
		// The gateway's ports as Gardener's deployer rendered its Service.
		svc := &corev1.Service{}
		Expect(s.client.Get(ctx, client.ObjectKey{Namespace: gw.namespace, Name: "istio-ingressgateway"}, svc)).To(Succeed())
		var ports []*istioapinetworkingv1alpha3.ServicePort
		for _, p := range svc.Spec.Ports {
			ports = append(ports, &istioapinetworkingv1alpha3.ServicePort{Number: uint32(p.Port), TargetPort: uint32(p.TargetPort.IntValue()), Name: p.Name, Protocol: "TCP"}) //nolint:gosec // ports
		}
		add(gvk.ServiceEntry, metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: gw.namespace}, &istioapinetworkingv1alpha3.ServiceEntry{
			Hosts:      []string{"istio-ingressgateway." + gw.namespace + ".svc.cluster.local"},
			Ports:      ports,
			Resolution: istioapinetworkingv1alpha3.ServiceEntry_STATIC,
			Location:   istioapinetworkingv1alpha3.ServiceEntry_MESH_INTERNAL,
			Endpoints:  []*istioapinetworkingv1alpha3.WorkloadEntry{{Address: gw.ips[0], Labels: gw.labels}},
		})
	}
	for _, sh := range s.shoots {
		for _, svc := range []struct {
			name string
			port uint32
		}{{"kube-apiserver", 443}, {"kube-apiserver-mtls", 443}, {"kube-apiserver-connection-upgrade", 443}, {"vpn-seed-server", 1194}, {"plutono", 3000}} {
			add(gvk.ServiceEntry, metav1.ObjectMeta{Name: svc.name, Namespace: sh.namespace}, &istioapinetworkingv1alpha3.ServiceEntry{
				Hosts:      []string{svc.name + "." + sh.namespace + ".svc.cluster.local"},
				Ports:      []*istioapinetworkingv1alpha3.ServicePort{{Number: svc.port, Name: "tcp", Protocol: "TCP"}},
				Resolution: istioapinetworkingv1alpha3.ServiceEntry_STATIC,
				Location:   istioapinetworkingv1alpha3.ServiceEntry_MESH_INTERNAL,
				Endpoints:  []*istioapinetworkingv1alpha3.WorkloadEntry{{Address: "10.3.0.10"}},
			})
		}
	}
	return out
}

func plutonoRoute(namespace string) []*istioapinetworkingv1beta1.HTTPRoute {
	return []*istioapinetworkingv1beta1.HTTPRoute{{Route: []*istioapinetworkingv1beta1.HTTPRouteDestination{{
		Destination: &istioapinetworkingv1beta1.Destination{Host: "plutono." + namespace + ".svc.cluster.local", Port: &istioapinetworkingv1beta1.PortSelector{Number: 3000}},
	}}}}
}

// generated is what istiod's config generation produced for one gateway.
type generated struct {
	cg        *core.ConfigGenTest
	proxy     *model.Proxy
	listeners map[string]*listenerv3.Listener
}

// generate runs Istio's config generation for the gateway's proxy on the seed's objects.
func (s *seed) generate(ctx context.Context, gw *gateway) *generated {
	GinkgoHelper()
	cg := core.NewConfigGenTest(GinkgoT(), core.TestOptions{Configs: s.istioConfigs(ctx)})
	proxy := cg.SetupProxy(&model.Proxy{
		Type:            model.Router,
		ConfigNamespace: gw.namespace,
		Labels:          gw.labels,
		IPAddresses:     gw.ips,
		Metadata:        &model.NodeMetadata{Labels: gw.labels, Namespace: gw.namespace, IstioVersion: "1.29.1"},
	})
	g := &generated{cg: cg, proxy: proxy, listeners: map[string]*listenerv3.Listener{}}
	for _, l := range cg.Listeners(proxy) {
		g.listeners[l.Name] = l
	}
	return g
}

// listener returns the generated listener of a port, whatever Istio named it
// for the gateway's address family (0.0.0.0_9443, ::_9443).
func (g *generated) listener(port int) *listenerv3.Listener {
	GinkgoHelper()
	var found []*listenerv3.Listener
	for _, l := range g.listeners {
		if int(l.GetAddress().GetSocketAddress().GetPortValue()) == port {
			found = append(found, l)
		}
	}
	Expect(found).To(HaveLen(1), "listeners on %d; have %v", port, keys(g.listeners))
	return found[0]
}

// chainsFor are the TLS listener's filter chains whose server names include host.
func chainsFor(l *listenerv3.Listener, host string) []*listenerv3.FilterChain {
	var out []*listenerv3.FilterChain
	for _, fc := range l.GetFilterChains() {
		if slices.Contains(fc.GetFilterChainMatch().GetServerNames(), host) {
			out = append(out, fc)
		}
	}
	return out
}

func filterNames(fc *listenerv3.FilterChain) []string {
	var out []string
	for _, f := range fc.GetFilters() {
		out = append(out, f.GetName())
	}
	return out
}

// httpFilters are the HTTP filters of the listener's HTTP connection managers, per chain.
func httpFilters(l *listenerv3.Listener) [][]*hcmv3.HttpFilter {
	GinkgoHelper()
	var out [][]*hcmv3.HttpFilter
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			if f.GetName() != "envoy.filters.network.http_connection_manager" {
				continue
			}
			hcm := &hcmv3.HttpConnectionManager{}
			Expect(f.GetTypedConfig().UnmarshalTo(hcm)).To(Succeed())
			out = append(out, hcm.GetHttpFilters())
		}
	}
	return out
}

// ecds returns the extension configs Istio serves for the names (ECDS).
func (g *generated) ecds(names ...string) map[string]*corev3.TypedExtensionConfig {
	out := map[string]*corev3.TypedExtensionConfig{}
	for _, ec := range g.cg.ConfigGen.BuildExtensionConfiguration(g.proxy, g.cg.PushContext(), names, nil) {
		out[ec.GetName()] = ec
	}
	return out
}

// chainBytes is each TLS filter chain's serialized form, by name, to see which chains changed.
func chainBytes(l *listenerv3.Listener) map[string][]byte {
	GinkgoHelper()
	out := map[string][]byte{}
	for _, fc := range l.GetFilterChains() {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(fc)
		Expect(err).NotTo(HaveOccurred())
		out[strings.Join(fc.GetFilterChainMatch().GetServerNames(), ",")+"|"+fc.GetName()] = b
	}
	return out
}

func listenerBytes(l *listenerv3.Listener) []byte {
	GinkgoHelper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(l)
	Expect(err).NotTo(HaveOccurred())
	return b
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ecdsNames are the ECDS resources the generated config refers to: the listeners' ACL filters and
// the shards their dispatch configs name, as Envoy would subscribe to them.
func ecdsNames(g *generated) []string {
	GinkgoHelper()
	var names []string
	for _, l := range envoy.HTTPConnectListeners {
		names = append(names, l.FilterName)
	}
	for _, ec := range g.ecds(names...) {
		raw := string(mustMarshal(ec))
		for _, l := range envoy.HTTPConnectListeners {
			for _, part := range strings.Split(raw, l.FilterName+"-")[1:] {
				if len(part) >= 10 {
					names = append(names, l.FilterName+"-"+part[:10])
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func mustMarshal(m proto.Message) []byte {
	GinkgoHelper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	Expect(err).NotTo(HaveOccurred())
	return b
}
