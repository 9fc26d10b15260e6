package acl

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	istioapinetworkingv1beta1 "istio.io/api/networking/v1beta1"
	istionetworkingv1beta1 "istio.io/client-go/pkg/apis/networking/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

func newTestActuator(t *testing.T, cfg Config, objs ...client.Object) *actuator {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).WithObjects(objs...).WithStatusSubresource(&extensionsv1alpha1.Infrastructure{}, &extensionsv1alpha1.Extension{}).Build()
	a, err := NewActuator(c, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a.(*actuator)
}

func TestNewActuatorRefusesABadOperatorCIDR(t *testing.T) {
	if _, err := NewActuator(nil, nil, Config{AlwaysAllowedCIDRs: []string{"10.0.0.0/33"}}); err == nil {
		t.Fatal("accepted a bad operator CIDR")
	}
}

func TestAlwaysAllowed(t *testing.T) {
	infra := &extensionsv1alpha1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "infra", Namespace: "shoot--p--a"}}
	infra.Status.EgressCIDRs = []string{"198.51.100.0/30", "not-a-cidr"}
	infra.Status.Networking = &extensionsv1alpha1.InfrastructureStatusNetworking{Nodes: []string{"10.251.0.0/16"}}
	a := newTestActuator(t, Config{AlwaysAllowedCIDRs: []string{"192.0.2.0/28"}}, infra)

	cluster := &extensionscontroller.Cluster{
		Seed: &gardencorev1beta1.Seed{Spec: gardencorev1beta1.SeedSpec{Networks: gardencorev1beta1.SeedNetworks{
			Nodes: ptr.To("10.1.0.0/16,fd00:1::/64"), Pods: "10.2.0.0/16",
		}}},
		Shoot: &gardencorev1beta1.Shoot{
			Spec: gardencorev1beta1.ShootSpec{Networking: &gardencorev1beta1.Networking{Nodes: ptr.To("10.250.0.0/16")}},
			Status: gardencorev1beta1.ShootStatus{Networking: &gardencorev1beta1.NetworkingStatus{
				Nodes: []string{"10.250.0.0/16", "2001:db8:250::/64"}, EgressCIDRs: []string{"203.0.113.7/32"},
			}},
		},
	}
	got, err := a.alwaysAllowed(context.Background(), "shoot--p--a", cluster)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.1.0.0/16", "10.2.0.0/16", "10.250.0.0/16", "10.251.0.0/16", "192.0.2.0/28", "198.51.100.0/30", "203.0.113.7/32", "2001:db8:250::/64", "fd00:1::/64"}
	if !slices.Equal(envoy.Strings(got), want) {
		t.Fatalf("got %v, want %v", envoy.Strings(got), want)
	}
}

func gateway(namespace, name string, selector map[string]string, hosts ...string) *istionetworkingv1beta1.Gateway {
	gw := &istionetworkingv1beta1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	gw.Spec.Selector = selector
	gw.Spec.Servers = []*istioapinetworkingv1beta1.Server{{Hosts: hosts}}
	return gw
}

func TestIngresses(t *testing.T) {
	def := map[string]string{"istio": "ingressgateway"}
	zonal := map[string]string{"istio": "ingressgateway--zone--b"}
	a := newTestActuator(t, Config{},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: "istio-ingress", Labels: def}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: "istio-ingress--zone-b", Labels: zonal}},
		gateway("shoot--p--a", "kube-apiserver", zonal, "api.a.example.com", "api.a.internal.example.com"),
		gateway("shoot--p--a", "kube-apiserver-wildcard", def, "*.seed.example.com", "api--a.seed.example.com"),
		gateway("shoot--p--a", "vpn", def, "vpn.a.example.com"),
		// The observability components, as Gardener exposes them on the seed's ingress domain.
		gateway("shoot--p--a", "plutono-shoot--p--a", def, "gu-p--a.ingress.seed.example.com"),
		gateway("shoot--p--a", "prometheus-shoot", def, "istio-ingress/p-p--a.ingress.seed.example.com"),
		// Neither a wildcard nor a host off the ingress domain of a Gateway that is not the kube-apiserver's.
		gateway("shoot--p--a", "some-extension", def, "*.ingress.seed.example.com", "x.example.org", "x.ingress.seed.example.com.evil.org"),
		gateway("shoot--p--b", "kube-apiserver", map[string]string{"istio": "unknown"}, "api.b.example.com"),
	)
	got, err := a.ingresses(context.Background(), "shoot--p--a", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].namespace != "istio-ingress" || got[1].namespace != "istio-ingress--zone-b" {
		t.Fatalf("got %+v", got)
	}
	if !slices.Equal(got[0].hosts, []string{"api--a.seed.example.com"}) || !slices.Equal(got[1].hosts, []string{"api.a.example.com", "api.a.internal.example.com"}) {
		t.Fatalf("hosts: %+v", got)
	}

	// With the seed's ingress domain, the observability hosts count too.
	got, err = a.ingresses(context.Background(), "shoot--p--a", "ingress.seed.example.com")
	if err != nil || len(got) != 2 {
		t.Fatalf("got %+v, %v", got, err)
	}
	if want := []string{"api--a.seed.example.com", "gu-p--a.ingress.seed.example.com", "p-p--a.ingress.seed.example.com"}; !slices.Equal(got[0].hosts, want) {
		t.Fatalf("hosts %v, want %v", got[0].hosts, want)
	}
	if got[1].selector["istio"] != "ingressgateway--zone--b" {
		t.Fatalf("selector: %+v", got[1])
	}

	// No Service matches: the default ingress namespace.
	got, err = a.ingresses(context.Background(), "shoot--p--b", "ingress.seed.example.com")
	if err != nil || len(got) != 1 || got[0].namespace != constants.DefaultIngressNamespace {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestSeedIngressDomain(t *testing.T) {
	if got := seedIngressDomain(nil); got != "" {
		t.Fatalf("no seed: %q", got)
	}
	seed := &gardencorev1beta1.Seed{Spec: gardencorev1beta1.SeedSpec{Ingress: &gardencorev1beta1.Ingress{Domain: "ingress.seed.example.com"}}}
	if got := seedIngressDomain(seed); got != "ingress.seed.example.com" {
		t.Fatalf("got %q", got)
	}
}

func TestStatusRoundTrip(t *testing.T) {
	p, _ := validation.Parse([]byte(`{"rule":{"action":"ALLOW","type":"direct_remote_ip","cidrs":["1.2.3.4/24"]}}`), validation.Limits{})
	always := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	shoot := envoy.NewShootPolicy("shoot--p--a", p, always)
	st := newStatus(p, shoot, always, []ingress{{namespace: "istio-ingress", selector: map[string]string{"a": "b"}, hosts: []string{"h"}}})
	ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: "shoot--p--a"}, Spec: extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: constants.ACLExtensionType}}}
	a := newTestActuator(t, Config{}, ex)
	if err := a.updateStatus(context.Background(), ex, st); err != nil {
		t.Fatal(err)
	}
	got, hosts, ok := providerstatus.Policy(ex)
	if !ok || !slices.Equal(hosts, []string{"h"}) || got.Type != "direct_remote_ip" || !slices.Equal(envoy.Strings(got.Allowed), envoy.Strings(shoot.Allowed)) {
		t.Fatalf("got %+v %v %v", got, hosts, ok)
	}
	ex.Spec.Type = "other"
	if _, _, ok := providerstatus.Policy(ex); ok {
		t.Fatal("a non-acl Extension has no policy")
	}
}
