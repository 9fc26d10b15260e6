package istio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	jsonpatch "github.com/evanphx/json-patch/v5"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/chartrenderer"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/component/kubernetes/apiserverexposure"
	sharedcomponent "github.com/gardener/gardener/pkg/component/shared"
	gardenerutils "github.com/gardener/gardener/pkg/utils/gardener"
	gardeneristio "github.com/gardener/gardener/pkg/utils/istio"
	fakesecretsmanager "github.com/gardener/gardener/pkg/utils/secrets/manager/fake"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	istionetworkingv1beta1 "istio.io/client-go/pkg/apis/networking/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	aclcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/acl"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/envoyfilter"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

const (
	seedIngressDomain = "ingress.seed.example.com"
	zone              = "a"
	exposureClass     = "internal"
	operatorCIDR      = "192.0.2.0/28"
)

// gateway is one Istio ingress gateway of the seed: its namespace and the labels of its pods.
type gateway struct {
	namespace string
	labels    map[string]string
	// ips are the gateway pod's addresses in the simulated mesh: IPv4,
	// IPv6 or both (Istio then builds its listeners for that family).
	ips []string
}

// shoot is a shoot's control plane on the seed, as far as its exposure goes.
type shoot struct {
	namespace string
	hosts     []string
	gateway   *gateway
	// tlsTermination has Gardener terminate TLS on the gateway (feature IstioTLSTermination):
	// then Gardener's per-shoot EnvoyFilter exists and the webhook injects the ACL into it.
	tlsTermination bool
	// observability is a host on the seed's ingress domain (Plutono), TLS terminated.
	observability string
	// rule is the acl providerConfig; empty means the shoot has no ACL.
	rule string
}

// seed is a seed's Istio configuration as Gardener v1.150 and this extension write it, on a fake
// client: Gardener's components deploy themselves into it, our actuator reconciles there.
type seed struct {
	client   client.Client
	gateways []*gateway
	shoots   []*shoot
	actuator interface {
		Reconcile(context.Context, logr.Logger, *extensionsv1alpha1.Extension) error
	}
}

// defaultGateways are the seed's default, zonal and exposure class gateways:
// IPv4, IPv6-only and dual-stack, so that every listener family Istio builds
// for port 9443 is checked.
func defaultGateways() (def, zonal, exposure *gateway) {
	labels := sharedcomponent.GetIstioZoneLabels(map[string]string{"app": "istio-ingressgateway", "istio": "ingressgateway"}, nil)
	z := zone
	def = &gateway{namespace: "istio-ingress", labels: labels, ips: []string{"10.0.0.1"}}
	zonal = &gateway{namespace: sharedcomponent.GetIstioNamespaceForZone("istio-ingress", zone), labels: sharedcomponent.GetIstioZoneLabels(labels, &z), ips: []string{"fd00::2"}}
	exposure = &gateway{
		namespace: "istio-ingress-handler-" + exposureClass,
		labels:    sharedcomponent.GetIstioZoneLabels(gardenerutils.GetMandatoryExposureClassHandlerSNILabels(nil, exposureClass), nil),
		ips:       []string{"10.0.0.3", "fd00::3"},
	}
	return def, zonal, exposure
}

// newSeed deploys Gardener's Istio ingress gateways (default, zonal, exposure class) with
// Gardener's own deployer, then each shoot's kube-apiserver exposure with Gardener's SNI component.
func newSeed(ctx context.Context, gateways []*gateway, shoots []*shoot) *seed {
	GinkgoHelper()
	return newSeedWith(ctx, gateways, shoots, true)
}

// newSeedWith is newSeed with or without the legacy VPN port (8132): gardenlet deploys the
// gateways without it under its RemoveHTTPProxyLegacyPort feature gate (seed/components.go).
func newSeedWith(ctx context.Context, gateways []*gateway, shoots []*shoot, httpProxyLegacyPort bool) *seed {
	GinkgoHelper()
	c := fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).
		WithStatusSubresource(&extensionsv1alpha1.Extension{}, &extensionsv1alpha1.Infrastructure{}).Build()
	s := &seed{client: c, gateways: gateways, shoots: shoots}

	ports := []corev1.ServicePort{
		{Name: "tcp", Port: 443, TargetPort: intstr.FromInt32(9443)},
		{Name: "http-proxy", Port: 8443, TargetPort: intstr.FromInt32(8443)},
	}
	if httpProxyLegacyPort {
		ports = append(ports, corev1.ServicePort{Name: "tls-tunnel", Port: 8132, TargetPort: intstr.FromInt32(8132)})
	}
	kubeVersion := semver.MustParse("1.33.0")
	renderer := chartrenderer.NewWithServerVersion(&version.Info{GitVersion: "v1.33.0"})
	istio, err := sharedcomponent.NewIstio(ctx, c, renderer, "", gateways[0].namespace, "gardener-system-critical", true,
		gateways[0].labels, nil, nil, nil, nil, nil, ports, nil, true, httpProxyLegacyPort, nil, false, kubeVersion)
	Expect(err).NotTo(HaveOccurred())
	for _, gw := range gateways[1:] {
		var z *string
		if strings.Contains(gw.namespace, "--") {
			z = new(string)
			*z = zone
		}
		Expect(sharedcomponent.AddIstioIngressGateway(ctx, c, istio, gw.namespace, nil, gw.labels, nil, nil, nil, z, false, nil, kubeVersion)).To(Succeed())
	}
	Expect(istio.Deploy(ctx)).To(Succeed())
	// Gardener's ManagedResource carries the gateway namespaces; gardener-resource-manager applies them.
	for _, gw := range gateways {
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gw.namespace, Labels: map[string]string{constants.IngressNamespaceLabel: constants.IngressNamespaceRole}}})).To(Succeed())
	}
	s.applyManagedResources(ctx, "")

	for _, sh := range shoots {
		s.deployShoot(ctx, sh)
	}
	a, err := aclcontroller.NewActuator(c, c, aclcontroller.Config{AlwaysAllowedCIDRs: []string{operatorCIDR}})
	Expect(err).NotTo(HaveOccurred())
	s.actuator = a
	return s
}

// applyManagedResources plays gardener-resource-manager: the objects of the seed
// ManagedResources in namespace ("" for all) are created or updated.
func (s *seed) applyManagedResources(ctx context.Context, namespace string) {
	GinkgoHelper()
	mrs := &resourcesv1alpha1.ManagedResourceList{}
	Expect(s.client.List(ctx, mrs, client.InNamespace(namespace))).To(Succeed())
	for _, mr := range mrs.Items {
		objs, err := framework.ManagedResourceObjects(ctx, s.client, mr.Namespace, mr.Name)
		Expect(err).NotTo(HaveOccurred())
		for _, o := range objs {
			if _, ok := o.(*corev1.Namespace); ok {
				continue
			}
			if o.GetNamespace() == "" && o.GetObjectKind().GroupVersionKind().Kind != "" && !isNamespaced(o) {
				continue
			}
			existing := o.DeepCopyObject().(client.Object)
			if err := s.client.Get(ctx, client.ObjectKeyFromObject(o), existing); err == nil {
				o.SetResourceVersion(existing.GetResourceVersion())
				Expect(s.client.Update(ctx, o)).To(Succeed())
			} else {
				Expect(client.IgnoreNotFound(err)).To(Succeed())
				Expect(s.client.Create(ctx, o)).To(Succeed())
			}
		}
	}
}

// isNamespaced tells the kinds of interest here (Istio networking, Services) from cluster-scoped ones.
func isNamespaced(o client.Object) bool {
	switch o.(type) {
	case *istionetworkingv1alpha3.EnvoyFilter, *istionetworkingv1beta1.Gateway, *istionetworkingv1beta1.VirtualService,
		*istionetworkingv1beta1.DestinationRule, *corev1.Service:
		return true
	}
	return false
}

// deployShoot exposes the shoot's kube-apiserver as gardenlet does (Gardener's SNI component),
// and its Plutono on the seed's ingress domain.
func (s *seed) deployShoot(ctx context.Context, sh *shoot) {
	GinkgoHelper()
	c := s.client
	Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sh.namespace, UID: types.UID("uid-" + sh.namespace),
		Labels: map[string]string{"gardener.cloud/role": "shoot"}}})).To(Succeed())
	// The CAs and the server certificate the secrets manager of the shoot's control plane holds.
	for _, name := range []string{"ca", "ca-client", "kube-apiserver-current"} {
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sh.namespace}})).To(Succeed())
	}
	sm := fakesecretsmanager.New(c, sh.namespace)
	sni := apiserverexposure.NewSNI(c, "kube-apiserver", sh.namespace, sm, func() *apiserverexposure.SNIValues {
		return &apiserverexposure.SNIValues{
			Hosts:               sh.hosts,
			APIServerProxy:      &apiserverexposure.APIServerProxy{APIServerClusterIP: "10.3.0.10"},
			IstioIngressGateway: apiserverexposure.IstioIngressGateway{Namespace: sh.gateway.namespace, Labels: sh.gateway.labels},
			IstioTLSTermination: sh.tlsTermination,
		}
	})
	Expect(sni.Deploy(ctx)).To(Succeed())
	s.applyManagedResources(ctx, sh.namespace)

	if sh.observability != "" {
		gw := &istionetworkingv1beta1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "plutono", Namespace: sh.namespace}}
		Expect(gardeneristio.GatewayWithTLSTermination(gw, map[string]string{"component": "plutono"}, sh.gateway.labels, []string{sh.observability}, sh.namespace+"-plutono-tls")()).To(Succeed())
		Expect(c.Create(ctx, gw)).To(Succeed())
		vs := &istionetworkingv1beta1.VirtualService{ObjectMeta: metav1.ObjectMeta{Name: "plutono", Namespace: sh.namespace}}
		vs.Spec.Hosts = []string{sh.observability}
		vs.Spec.Gateways = []string{"plutono"}
		vs.Spec.ExportTo = []string{"*"}
		vs.Spec.Http = plutonoRoute(sh.namespace)
		Expect(c.Create(ctx, vs)).To(Succeed())
	}

	seedJSON := `{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Seed","metadata":{"name":"seed"},"spec":{"networks":{"nodes":"10.1.0.0/16","pods":"10.2.0.0/16","services":"10.3.0.0/16"},"ingress":{"domain":"` + seedIngressDomain + `","controller":{"kind":"nginx"}}}}`
	shootJSON := `{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","metadata":{"name":"x","namespace":"garden-p"},
		"spec":{"networking":{"nodes":"10.250.0.0/16"}},"status":{"networking":{"nodes":["10.250.0.0/16","2001:db8:250::/64"],"egressCIDRs":["203.0.113.7/32"]}}}`
	Expect(c.Create(ctx, &extensionsv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: sh.namespace},
		Spec: extensionsv1alpha1.ClusterSpec{
			CloudProfile: runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"CloudProfile","metadata":{"name":"local"}}`)},
			Seed:         &runtime.RawExtension{Raw: []byte(seedJSON)},
			Shoot:        runtime.RawExtension{Raw: []byte(shootJSON)},
		},
	})).To(Succeed())
}

// reconcile runs the acl actuator for every shoot with a rule, then plays the webhook on Gardener's
// per-shoot EnvoyFilters (the fake client calls no webhook) and gardener-resource-manager, and
// reconciles again: the second round finds the injection and drops the shoot's own filter there.
func (s *seed) reconcile(ctx context.Context) {
	GinkgoHelper()
	for round := range 2 {
		for _, sh := range s.shoots {
			if sh.rule == "" {
				continue
			}
			ex := &extensionsv1alpha1.Extension{}
			err := s.client.Get(ctx, client.ObjectKey{Namespace: sh.namespace, Name: "acl"}, ex)
			if err != nil {
				ex = &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: sh.namespace}}
				ex.Spec.Type = constants.ACLExtensionType
				ex.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(sh.rule)}
				Expect(s.client.Create(ctx, ex)).To(Succeed())
			} else if string(ex.Spec.ProviderConfig.Raw) != sh.rule {
				ex.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(sh.rule)}
				Expect(s.client.Update(ctx, ex)).To(Succeed())
			}
			Expect(s.actuator.Reconcile(ctx, logr.Discard(), ex)).To(Succeed(), "round %d, %s", round, sh.namespace)
		}
		if round == 0 {
			s.runWebhook(ctx)
		}
	}
	// gardener-resource-manager applies the ManagedResources; each write of Gardener's per-shoot
	// EnvoyFilter passes the webhook.
	s.applyManagedResources(ctx, "")
	s.runWebhook(ctx)
}

// runWebhook mutates every Gardener per-shoot EnvoyFilter as the seed's kube-apiserver would
// through the webhook.
func (s *seed) runWebhook(ctx context.Context) {
	GinkgoHelper()
	m := &envoyfilter.Mutator{Reader: s.client}
	efs := &istionetworkingv1alpha3.EnvoyFilterList{}
	Expect(s.client.List(ctx, efs)).To(Succeed())
	for _, ef := range efs.Items {
		if !strings.HasSuffix(ef.Name, constants.GardenerTLSTerminationSuffix) {
			continue
		}
		raw, err := json.Marshal(ef)
		Expect(err).NotTo(HaveOccurred())
		resp := m.Handle(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Name: ef.Name, Namespace: ef.Namespace, Object: runtime.RawExtension{Raw: raw}}})
		Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
		if len(resp.Patches) == 0 {
			continue
		}
		ops, err := json.Marshal(resp.Patches)
		Expect(err).NotTo(HaveOccurred())
		patch, err := jsonpatch.DecodePatch(ops)
		Expect(err).NotTo(HaveOccurred())
		mutated, err := patch.Apply(raw)
		Expect(err).NotTo(HaveOccurred())
		out := &istionetworkingv1alpha3.EnvoyFilter{}
		Expect(json.Unmarshal(mutated, out)).To(Succeed())
		Expect(s.client.Update(ctx, out)).To(Succeed())
	}
}

// shootByNamespace returns the shoot of the seed in namespace.
func (s *seed) shootByNamespace(namespace string) *shoot {
	for _, sh := range s.shoots {
		if sh.namespace == namespace {
			return sh
		}
	}
	Fail(fmt.Sprintf("no shoot %s", namespace))
	return nil
}
