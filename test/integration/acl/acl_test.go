package acl_test

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	gardeneristio "github.com/gardener/gardener/pkg/utils/istio"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"
	istioapinetworkingv1beta1 "istio.io/api/networking/v1beta1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	istionetworkingv1beta1 "istio.io/client-go/pkg/apis/networking/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/envoyfilter"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

const (
	shootNamespace   = "shoot--acl--a"
	ingressNamespace = "istio-ingress"
	gardenerFilter   = shootNamespace + "-istio-tls-termination"
	zonalNamespace   = "istio-ingress--zone-a"
	// seedIngressDomain is the seed's wildcard ingress domain; Gardener exposes each shoot's
	// observability components on it (gu-, p-, au-, v-, otc-<project>--<shoot>).
	seedIngressDomain = "ingress.seed.acl.example.com"
	timeout           = 30 * time.Second
)

var (
	gatewayLabels = map[string]string{"app": "istio-ingressgateway", "istio": "ingressgateway"}
	zonalLabels   = map[string]string{"app": "istio-ingressgateway", "istio": "ingressgateway--zone--a"}
	apiHosts      = []string{"api.a.acl.example.com", "api.a.acl.internal.example.com"}
	// every CIDR that must be allowed besides the rule's: seed nodes and pods, shoot nodes (spec
	// and status, IPv4 and IPv6), shoot egress (status and Infrastructure), the operator's.
	alwaysAllowed = []string{"10.1.0.0/16", "10.2.0.0/16", "10.250.0.0/16", "2001:db8:250::/64", "203.0.113.7/32", "198.51.100.0/30", operatorCIDR}
)

// managedResourceObjects decodes the objects a seed ManagedResource carries.
func managedResourceObjects(namespace, name string) ([]client.Object, error) {
	return framework.ManagedResourceObjects(ctx(), testClient, namespace, name)
}

func envoyFilterNamed(objs []client.Object, namespace, name string) *istionetworkingv1alpha3.EnvoyFilter {
	for _, o := range objs {
		if ef, ok := o.(*istionetworkingv1alpha3.EnvoyFilter); ok && ef.Namespace == namespace && ef.Name == name {
			return ef
		}
	}
	return nil
}

// sharedFilter returns the objects of the shared HTTP-CONNECT filter's
// ManagedResource in the gateway namespace as JSON.
func sharedFilter(g Gomega, namespace string) string {
	objs, err := framework.ACLSharedObjects(ctx(), testClient, namespace)
	g.Expect(err).NotTo(HaveOccurred())
	return toJSON(objs)
}

func toJSON(o any) string {
	data, err := json.Marshal(o)
	Expect(err).NotTo(HaveOccurred())
	return string(data)
}

func providerStatus(ex *extensionsv1alpha1.Extension) *v1alpha1.ExtensionStatus {
	if ex.Status.ProviderStatus == nil {
		return nil
	}
	st := &v1alpha1.ExtensionStatus{}
	Expect(json.Unmarshal(ex.Status.ProviderStatus.Raw, st)).To(Succeed())
	return st
}

func injectedPatches(ef *istionetworkingv1alpha3.EnvoyFilter) int {
	n := 0
	for _, p := range ef.Spec.ConfigPatches {
		if envoy.IsInjected(p) {
			n++
		}
	}
	return n
}

func rule(action string, cidrs ...string) *runtime.RawExtension {
	raw, err := json.Marshal(map[string]any{"rule": map[string]any{"action": action, "type": "remote_ip", "cidrs": cidrs}})
	Expect(err).NotTo(HaveOccurred())
	return &runtime.RawExtension{Raw: raw}
}

// gardenersEnvoyFilter looks like the one Gardener deploys per shoot with TLS termination.
func gardenersEnvoyFilter(name string) *istionetworkingv1alpha3.EnvoyFilter {
	ef := &istionetworkingv1alpha3.EnvoyFilter{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ingressNamespace}}
	ef.Spec.WorkloadSelector = &istioapinetworkingv1alpha3.WorkloadSelector{Labels: gatewayLabels}
	ef.Spec.ConfigPatches = []*istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch{{
		ApplyTo: istioapinetworkingv1alpha3.EnvoyFilter_HTTP_ROUTE,
		Match: &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectMatch{
			Context: istioapinetworkingv1alpha3.EnvoyFilter_GATEWAY,
			ObjectTypes: &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectMatch_RouteConfiguration{RouteConfiguration: &istioapinetworkingv1alpha3.EnvoyFilter_RouteConfigurationMatch{
				Name: "https.443.tls.kube-apiserver." + strings.TrimSuffix(name, "-istio-tls-termination"),
			}},
		},
		Patch: &istioapinetworkingv1alpha3.EnvoyFilter_Patch{Operation: istioapinetworkingv1alpha3.EnvoyFilter_Patch_INSERT_BEFORE},
	}}
	return ef
}

// createShoot creates what Gardener has for a shoot in the seed: namespace, Cluster (Shoot and Seed
// in raw JSON), Infrastructure with egress CIDRs and the kube-apiserver Gateway.
func createShoot(namespace string, hosts []string, selector map[string]string) {
	createShootWith(testClient, namespace, hosts, selector)
}

func createShootWith(testClient client.Client, namespace string, hosts []string, selector map[string]string) {
	Expect(testClient.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{"gardener.cloud/role": "shoot"}}})).To(Succeed())

	seedJSON := `{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Seed","metadata":{"name":"seed"},"spec":{"networks":{"nodes":"10.1.0.0/16","pods":"10.2.0.0/16","services":"10.3.0.0/16"},"ingress":{"domain":"` + seedIngressDomain + `","controller":{"kind":"nginx"}}}}`
	shootJSON := `{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","metadata":{"name":"a","namespace":"garden-acl"},
		"spec":{"networking":{"nodes":"10.250.0.0/16"}},
		"status":{"networking":{"nodes":["10.250.0.0/16","2001:db8:250::/64"],"egressCIDRs":["203.0.113.7/32"]}}}`
	Expect(testClient.Create(ctx(), &extensionsv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: namespace},
		Spec: extensionsv1alpha1.ClusterSpec{
			CloudProfile: runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"CloudProfile","metadata":{"name":"local"}}`)},
			Seed:         &runtime.RawExtension{Raw: []byte(seedJSON)},
			Shoot:        runtime.RawExtension{Raw: []byte(shootJSON)},
		},
	})).To(Succeed())

	infra := &extensionsv1alpha1.Infrastructure{
		ObjectMeta: metav1.ObjectMeta{Name: "infra", Namespace: namespace},
		Spec: extensionsv1alpha1.InfrastructureSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "local"},
			Region:      "local",
			SecretRef:   corev1.SecretReference{Name: "cloudprovider", Namespace: namespace},
		},
	}
	Expect(testClient.Create(ctx(), infra)).To(Succeed())
	infra.Status.EgressCIDRs = []string{"198.51.100.0/30"}
	Expect(testClient.Status().Update(ctx(), infra)).To(Succeed())

	gw := &istionetworkingv1beta1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver", Namespace: namespace}}
	gw.Spec.Selector = selector
	gw.Spec.Servers = []*istioapinetworkingv1beta1.Server{{
		Port:  &istioapinetworkingv1beta1.Port{Number: 443, Name: "tls", Protocol: "TLS"},
		Hosts: hosts,
		Tls:   &istioapinetworkingv1beta1.ServerTLSSettings{Mode: istioapinetworkingv1beta1.ServerTLSSettings_PASSTHROUGH},
	}}
	Expect(testClient.Create(ctx(), gw)).To(Succeed())
}

var _ = Describe("Extension acl", Ordered, func() {
	var ex *extensionsv1alpha1.Extension

	BeforeAll(func() {
		By("Creating the seed's ingress gateway and a shoot namespace as Gardener has them")
		Expect(testClient.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ingressNamespace, Labels: map[string]string{"gardener.cloud/role": "istio-ingress"}}})).To(Succeed())
		Expect(testClient.Create(ctx(), &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: ingressNamespace, Labels: gatewayLabels},
			Spec: corev1.ServiceSpec{Selector: gatewayLabels, Ports: []corev1.ServicePort{
				{Name: "tls-tunnel", Port: 8132, TargetPort: intstr.FromInt32(8132)},
				{Name: "https", Port: 443, TargetPort: intstr.FromInt32(9443)},
				{Name: "http-connect", Port: 8443, TargetPort: intstr.FromInt32(8443)},
			}},
		})).To(Succeed())
		createShoot(shootNamespace, apiHosts, gatewayLabels)
	})

	It("deploys the shoot's EnvoyFilter and the shared HTTP-CONNECT filter with the rule's and the always-allowed CIDRs", func() {
		ex = &extensionsv1alpha1.Extension{
			ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: shootNamespace},
			Spec: extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{
				Type:           constants.ACLExtensionType,
				ProviderConfig: &runtime.RawExtension{Raw: []byte(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24","2001:db8::/32"]}}`)},
			}},
		}
		Expect(testClient.Create(ctx(), ex)).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(testClient.Get(ctx(), client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			g.Expect(ex.Status.LastOperation).NotTo(BeNil())
			g.Expect(ex.Status.LastOperation.State).To(Equal(v1beta1.LastOperationStateSucceeded), "%v", ex.Status.LastError)
		}).WithTimeout(timeout).Should(Succeed())

		By("Reporting the effective allow-list in the status")
		st := providerStatus(ex)
		Expect(st).NotTo(BeNil())
		Expect(st.Action).To(Equal("ALLOW"))
		Expect(st.RuleCIDRs).To(ConsistOf("1.2.3.0/24", "2001:db8::/32"))
		Expect(st.AlwaysAllowedCIDRs).To(ConsistOf(alwaysAllowed))
		// 2001:db8:250::/64 lies inside the rule's 2001:db8::/32, so the list holds the /32 only.
		Expect(st.AllowedCIDRs).To(ConsistOf("1.2.3.0/24", "2001:db8::/32", "10.1.0.0/16", "10.2.0.0/16", "10.250.0.0/16", "203.0.113.7/32", "198.51.100.0/30", operatorCIDR))
		Expect(st.IngressNamespaces).To(ConsistOf(ingressNamespace))
		Expect(st.Hosts).To(ConsistOf(apiHosts))

		By("Deploying the shoot's EnvoyFilter into the ingress namespace through a ManagedResource")
		objs, err := managedResourceObjects(shootNamespace, constants.ACLManagedResourceName)
		Expect(err).NotTo(HaveOccurred())
		ef := envoyFilterNamed(objs, ingressNamespace, "acl-"+shootNamespace)
		Expect(ef).NotTo(BeNil(), "objects: %v", objs)
		Expect(ef.Spec.WorkloadSelector.GetLabels()).To(Equal(gatewayLabels))
		// Per host: remove the filter from the host's chain, then insert it first.
		Expect(ef.Spec.ConfigPatches).To(HaveLen(2 * len(apiHosts)))
		Expect(ef.Spec.ConfigPatches[0].Match.GetListener().GetPortNumber()).To(Equal(uint32(9443)))
		Expect(ef.Spec.ConfigPatches[0].Match.GetListener().GetFilterChain().GetSni()).To(Equal(apiHosts[0]))
		content := toJSON(ef)
		for _, want := range []string{`"address_prefix":"1.2.3.0"`, `"address_prefix":"2001:db8::"`, `"address_prefix":"10.1.0.0"`, `"address_prefix":"10.2.0.0"`,
			`"address_prefix":"10.250.0.0"`, `"address_prefix":"203.0.113.7"`, `"address_prefix":"198.51.100.0"`, `"address_prefix":"192.0.2.0"`,
			"envoy.extensions.filters.network.rbac.v3.RBAC"} {
			Expect(content).To(ContainSubstring(want))
		}
		// ALLOW is RBAC's default action, which protojson leaves out.
		Expect(content).NotTo(ContainSubstring(`"action":"DENY"`))

		By("Deploying the shared HTTP-CONNECT filter in the ingress namespace: the root (listener filters, dispatch) and one shard")
		root, err := managedResourceObjects(ingressNamespace, constants.ACLSharedManagedResourceName)
		Expect(err).NotTo(HaveOccurred())
		Expect(root).To(HaveLen(1))
		rootJSON := toJSON(root[0])
		for _, want := range []string{"EXTENSION_CONFIG", "config_discovery", "envoy.extensions.common.matching.v3.ExtensionWithMatcher", "envoy.extensions.filters.http.composite.v3.ExecuteFilterAction",
			"X-Gardener-Destination", "reversed-vpn", "prefix_match_map", envoy.HTTPFilterName, envoy.LegacyHTTPFilterName} {
			Expect(rootJSON).To(ContainSubstring(want))
		}
		shared, err := framework.ACLSharedObjects(ctx(), testClient, ingressNamespace)
		Expect(err).NotTo(HaveOccurred())
		Expect(shared).To(HaveLen(2), "the root and one shard")
		sharedJSON := toJSON(shared[1])
		for _, want := range []string{"EXTENSION_CONFIG", "envoy.extensions.filters.http.rbac.v3.RBAC", "X-Gardener-Destination",
			"." + shootNamespace + ".svc.cluster.local", `"address_prefix":"1.2.3.0"`, `"address_prefix":"192.0.2.0"`, "envoy.matching.custom_matchers.trie_matcher", "HttpRequestHeaderMatchInput"} {
			Expect(sharedJSON).To(ContainSubstring(want))
		}
	})

	It("injects the policy into Gardener's per-shoot EnvoyFilter when it is created, and no longer deploys its own", func() {
		ef := gardenersEnvoyFilter(gardenerFilter)
		Expect(testClient.Create(ctx(), ef)).To(Succeed())
		// The create response is what the webhook made of it.
		Expect(injectedPatches(ef)).To(Equal(2 * len(apiHosts)))
		Expect(ef.Spec.ConfigPatches).To(HaveLen(1 + 2*len(apiHosts)))
		Expect(toJSON(ef)).To(ContainSubstring(`"address_prefix":"1.2.3.0"`))

		By("Leaving other shoots' EnvoyFilters alone")
		other := gardenersEnvoyFilter("shoot--other--b-istio-tls-termination")
		Expect(testClient.Create(ctx(), other)).To(Succeed())
		Expect(other.Spec.ConfigPatches).To(HaveLen(1))

		By("Dropping the shoot's own EnvoyFilter, the policy being evaluated once")
		Eventually(func(g Gomega) {
			objs, err := managedResourceObjects(shootNamespace, constants.ACLManagedResourceName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(envoyFilterNamed(objs, ingressNamespace, "acl-"+shootNamespace)).To(BeNil())
		}).WithTimeout(timeout).Should(Succeed())

		By("Reporting healthy once gardener-resource-manager (played here) has applied the ManagedResource")
		Eventually(systemComponentsHealthy(shootNamespace)).WithTimeout(timeout).Should(HaveField("Status", v1beta1.ConditionTrue))
	})

	It("refuses an invalid providerConfig with an error naming field and value, and changes nothing", func() {
		Expect(testClient.Get(ctx(), client.ObjectKeyFromObject(ex), ex)).To(Succeed())
		statusBefore := string(ex.Status.ProviderStatus.Raw)
		mrBefore := &resourcesv1alpha1.ManagedResource{}
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: shootNamespace, Name: constants.ACLManagedResourceName}, mrBefore)).To(Succeed())
		gardenerBefore := &istionetworkingv1alpha3.EnvoyFilter{}
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: ingressNamespace, Name: gardenerFilter}, gardenerBefore)).To(Succeed())

		patch := client.MergeFrom(ex.DeepCopy())
		ex.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["10.0.0.0/8","1.2.3.400/24"]}}`)}
		Expect(testClient.Patch(ctx(), ex, patch)).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(testClient.Get(ctx(), client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			g.Expect(ex.Status.LastError).NotTo(BeNil())
			g.Expect(ex.Status.LastError.Description).To(ContainSubstring("providerConfig.rule.cidrs[1]"))
			g.Expect(ex.Status.LastError.Description).To(ContainSubstring("1.2.3.400/24"))
		}).WithTimeout(timeout).Should(Succeed())

		Expect(string(ex.Status.ProviderStatus.Raw)).To(Equal(statusBefore))
		mrAfter := &resourcesv1alpha1.ManagedResource{}
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: shootNamespace, Name: constants.ACLManagedResourceName}, mrAfter)).To(Succeed())
		Expect(mrAfter.ResourceVersion).To(Equal(mrBefore.ResourceVersion))
		gardenerAfter := &istionetworkingv1alpha3.EnvoyFilter{}
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: ingressNamespace, Name: gardenerFilter}, gardenerAfter)).To(Succeed())
		Expect(gardenerAfter.ResourceVersion).To(Equal(gardenerBefore.ResourceVersion))
	})

	It("re-injects a changed rule into Gardener's EnvoyFilter and the shared filter", func() {
		Expect(testClient.Get(ctx(), client.ObjectKeyFromObject(ex), ex)).To(Succeed())
		patch := client.MergeFrom(ex.DeepCopy())
		ex.Spec.ProviderConfig = rule("allow", "5.6.7.0/24")
		Expect(testClient.Patch(ctx(), ex, patch)).To(Succeed())

		Eventually(func(g Gomega) {
			ef := &istionetworkingv1alpha3.EnvoyFilter{}
			g.Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: ingressNamespace, Name: gardenerFilter}, ef)).To(Succeed())
			content := toJSON(ef)
			g.Expect(content).To(ContainSubstring(`"address_prefix":"5.6.7.0"`))
			g.Expect(content).NotTo(ContainSubstring(`"address_prefix":"1.2.3.0"`))
			g.Expect(injectedPatches(ef)).To(Equal(2 * len(apiHosts)))
		}).WithTimeout(timeout).Should(Succeed())
		Eventually(func(g Gomega) {
			shared := sharedFilter(g, ingressNamespace)
			g.Expect(shared).To(ContainSubstring(`"address_prefix":"5.6.7.0"`))
			g.Expect(shared).NotTo(ContainSubstring(`"address_prefix":"1.2.3.0"`))
		}).WithTimeout(timeout).Should(Succeed())
	})

	It("follows new egress CIDRs of the Infrastructure at once", func() {
		infra := &extensionsv1alpha1.Infrastructure{}
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: shootNamespace, Name: "infra"}, infra)).To(Succeed())
		infra.Status.EgressCIDRs = append(infra.Status.EgressCIDRs, "198.51.100.64/26")
		Expect(testClient.Status().Update(ctx(), infra)).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(testClient.Get(ctx(), client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			g.Expect(providerStatus(ex).AlwaysAllowedCIDRs).To(ContainElement("198.51.100.64/26"))
			ef := &istionetworkingv1alpha3.EnvoyFilter{}
			g.Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: ingressNamespace, Name: gardenerFilter}, ef)).To(Succeed())
			g.Expect(toJSON(ef)).To(ContainSubstring(`"address_prefix":"198.51.100.64"`))
		}).WithTimeout(timeout).Should(Succeed())
	})

	It("restricts the shoot's observability endpoints on the seed's ingress domain like its kube-apiserver", func() {
		plutonoHost := "gu-acl--a." + seedIngressDomain
		By("Exposing Plutono as Gardener v1.150 does: a Gateway in the shoot namespace, TLS terminated on the ingress gateway")
		gw := &istionetworkingv1beta1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "plutono-" + shootNamespace, Namespace: shootNamespace}}
		Expect(gardeneristio.GatewayWithTLSTermination(gw, map[string]string{"component": "plutono"}, gatewayLabels, []string{plutonoHost}, shootNamespace+"-plutono-tls")()).To(Succeed())
		Expect(testClient.Create(ctx(), gw)).To(Succeed())
		By("Leaving alone what is not the shoot's own: a wildcard and a host off the ingress domain")
		other := &istionetworkingv1beta1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "some-extension", Namespace: shootNamespace}}
		Expect(gardeneristio.GatewayWithTLSPassthrough(other, nil, gatewayLabels, []string{"*." + seedIngressDomain, "hooks.example.org"})()).To(Succeed())
		Expect(testClient.Create(ctx(), other)).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(testClient.Get(ctx(), client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			g.Expect(providerStatus(ex).Hosts).To(ConsistOf(append([]string{plutonoHost}, apiHosts...)))
			ef := &istionetworkingv1alpha3.EnvoyFilter{}
			g.Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: ingressNamespace, Name: gardenerFilter}, ef)).To(Succeed())
			g.Expect(injectedPatches(ef)).To(Equal(2 * (len(apiHosts) + 1)))
			var snis []string
			for _, p := range ef.Spec.ConfigPatches {
				if envoy.IsInjected(p) && p.GetPatch().GetOperation() == istioapinetworkingv1alpha3.EnvoyFilter_Patch_INSERT_FIRST {
					snis = append(snis, p.GetMatch().GetListener().GetFilterChain().GetSni())
					g.Expect(p.GetMatch().GetListener().GetPortNumber()).To(Equal(uint32(envoy.TLSListenerPort)))
					g.Expect(toJSON(p)).To(ContainSubstring(`"address_prefix":"5.6.7.0"`))
				}
			}
			g.Expect(snis).To(ConsistOf(append([]string{plutonoHost}, apiHosts...)))
		}).WithTimeout(timeout).Should(Succeed())

		By("Dropping the host again when Gardener removes the Gateway")
		Expect(testClient.Delete(ctx(), gw)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(testClient.Get(ctx(), client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			g.Expect(providerStatus(ex).Hosts).To(ConsistOf(apiHosts))
			ef := &istionetworkingv1alpha3.EnvoyFilter{}
			g.Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: ingressNamespace, Name: gardenerFilter}, ef)).To(Succeed())
			g.Expect(injectedPatches(ef)).To(Equal(2 * len(apiHosts)))
		}).WithTimeout(timeout).Should(Succeed())
		Expect(testClient.Delete(ctx(), other)).To(Succeed())
	})

	It("keeps one shared HTTP-CONNECT filter per ingress namespace whatever the number of shoots, and serves zonal gateways", func() {
		Expect(testClient.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: zonalNamespace, Labels: map[string]string{"gardener.cloud/role": "istio-ingress"}}})).To(Succeed())
		Expect(testClient.Create(ctx(), &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway", Namespace: zonalNamespace, Labels: zonalLabels},
			Spec:       corev1.ServiceSpec{Selector: zonalLabels, Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(9443)}}},
		})).To(Succeed())
		createShoot("shoot--acl--b", []string{"api.b.acl.example.com"}, gatewayLabels)
		createShoot("shoot--acl--c", []string{"api.c.acl.example.com"}, zonalLabels)
		for ns, cfg := range map[string]*runtime.RawExtension{"shoot--acl--b": rule("DENY", "192.0.2.128/25", "10.250.7.0/24"), "shoot--acl--c": rule("ALLOW", "9.9.9.0/24")} {
			Expect(testClient.Create(ctx(), &extensionsv1alpha1.Extension{
				ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: ns},
				Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: constants.ACLExtensionType, ProviderConfig: cfg}},
			})).To(Succeed())
		}
		for _, ns := range []string{"shoot--acl--b", "shoot--acl--c"} {
			Eventually(func(g Gomega) {
				other := &extensionsv1alpha1.Extension{}
				g.Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "acl"}, other)).To(Succeed())
				g.Expect(other.Status.LastOperation).NotTo(BeNil())
				g.Expect(other.Status.LastOperation.State).To(Equal(v1beta1.LastOperationStateSucceeded))
			}).WithTimeout(timeout).Should(Succeed())
		}

		By("Denying only what is not always allowed for a DENY rule")
		b := &extensionsv1alpha1.Extension{}
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: "shoot--acl--b", Name: "acl"}, b)).To(Succeed())
		Expect(providerStatus(b).DeniedCIDRs).To(ConsistOf("192.0.2.128/25"))

		By("Serving the zonal shoot from the zonal ingress namespace only")
		c := &extensionsv1alpha1.Extension{}
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: "shoot--acl--c", Name: "acl"}, c)).To(Succeed())
		Expect(providerStatus(c).IngressNamespaces).To(ConsistOf(zonalNamespace))
		objs, err := managedResourceObjects("shoot--acl--c", constants.ACLManagedResourceName)
		Expect(err).NotTo(HaveOccurred())
		ef := envoyFilterNamed(objs, zonalNamespace, "acl-shoot--acl--c")
		Expect(ef).NotTo(BeNil())
		Expect(ef.Spec.WorkloadSelector.GetLabels()).To(Equal(zonalLabels))

		Eventually(func(g Gomega) {
			shared, err := framework.ACLSharedObjects(ctx(), testClient, ingressNamespace)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(shared).To(HaveLen(2), "the root and one shard")
			content := toJSON(shared)
			g.Expect(content).To(ContainSubstring(".shoot--acl--a.svc.cluster.local"))
			g.Expect(content).To(ContainSubstring(".shoot--acl--b.svc.cluster.local"))
			g.Expect(content).NotTo(ContainSubstring("shoot--acl--c"))
			zonal, err := framework.ACLSharedObjects(ctx(), testClient, zonalNamespace)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(zonal).To(HaveLen(2), "the root and one shard")
			g.Expect(toJSON(zonal)).To(ContainSubstring(".shoot--acl--c.svc.cluster.local"))
			g.Expect(toJSON(zonal)).NotTo(ContainSubstring("shoot--acl--a"))
		}).WithTimeout(timeout).Should(Succeed())
	})

	It("follows a shoot whose Gateway moves to another ingress gateway", func() {
		gw := &istionetworkingv1beta1.Gateway{}
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: "shoot--acl--c", Name: "kube-apiserver"}, gw)).To(Succeed())
		gw.Spec.Selector = gatewayLabels
		Expect(testClient.Update(ctx(), gw)).To(Succeed())

		Eventually(func(g Gomega) {
			c := &extensionsv1alpha1.Extension{}
			g.Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: "shoot--acl--c", Name: "acl"}, c)).To(Succeed())
			g.Expect(providerStatus(c).IngressNamespaces).To(ConsistOf(ingressNamespace))
			objs, err := managedResourceObjects("shoot--acl--c", constants.ACLManagedResourceName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(envoyFilterNamed(objs, ingressNamespace, "acl-shoot--acl--c")).NotTo(BeNil())
			g.Expect(envoyFilterNamed(objs, zonalNamespace, "acl-shoot--acl--c")).To(BeNil())
			g.Expect(sharedFilter(g, ingressNamespace)).To(ContainSubstring(".shoot--acl--c.svc.cluster.local"))
			// The zonal gateway serves no ACL shoot any more: its shared filter is gone.
			g.Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: zonalNamespace, Name: constants.ACLSharedManagedResourceName}, &resourcesv1alpha1.ManagedResource{})).To(Satisfy(apierrors.IsNotFound))
		}).WithTimeout(timeout).Should(Succeed())
	})

	It("removes a migrated shoot's enforcement from this seed", func() {
		b := &extensionsv1alpha1.Extension{}
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: "shoot--acl--b", Name: "acl"}, b)).To(Succeed())
		patch := client.MergeFrom(b.DeepCopy())
		metav1.SetMetaDataAnnotation(&b.ObjectMeta, "gardener.cloud/operation", "migrate")
		// The test manager ignores the operation annotation and reacts to generation changes only,
		// so the spec changes too (same rule, other order).
		b.Spec.ProviderConfig = rule("DENY", "10.250.7.0/24", "192.0.2.128/25")
		Expect(testClient.Patch(ctx(), b, patch)).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(testClient.Get(ctx(), client.ObjectKeyFromObject(b), b)).To(Succeed())
			g.Expect(b.Status.LastOperation.Type).To(Equal(v1beta1.LastOperationTypeMigrate))
			g.Expect(b.Status.LastOperation.State).To(Equal(v1beta1.LastOperationStateSucceeded))
			g.Expect(b.Finalizers).To(BeEmpty())
		}).WithTimeout(timeout).Should(Succeed())
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: "shoot--acl--b", Name: constants.ACLManagedResourceName}, &resourcesv1alpha1.ManagedResource{})).To(Satisfy(apierrors.IsNotFound))
		// The shared filter follows through the rebuild that runs or comes next (rebuilds coalesce).
		Eventually(func(g Gomega) {
			shared := sharedFilter(g, ingressNamespace)
			g.Expect(shared).NotTo(ContainSubstring("shoot--acl--b"))
			g.Expect(shared).To(ContainSubstring(".shoot--acl--a.svc.cluster.local"))
		}).WithTimeout(timeout).Should(Succeed())
	})

	It("puts the shoot's own EnvoyFilter back when Gardener rewrites its EnvoyFilter while the webhook is down", func() {
		Expect(testClient.Delete(ctx(), &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: envoyfilter.Name}})).To(Succeed())

		ef := &istionetworkingv1alpha3.EnvoyFilter{}
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: ingressNamespace, Name: gardenerFilter}, ef)).To(Succeed())
		ef.Spec.ConfigPatches = gardenersEnvoyFilter(gardenerFilter).Spec.ConfigPatches
		Expect(testClient.Update(ctx(), ef)).To(Succeed())
		Expect(injectedPatches(ef)).To(BeZero())

		Eventually(func(g Gomega) {
			objs, err := managedResourceObjects(shootNamespace, constants.ACLManagedResourceName)
			g.Expect(err).NotTo(HaveOccurred())
			own := envoyFilterNamed(objs, ingressNamespace, "acl-"+shootNamespace)
			g.Expect(own).NotTo(BeNil())
			g.Expect(toJSON(own)).To(ContainSubstring(`"address_prefix":"5.6.7.0"`))
		}).WithTimeout(timeout).Should(Succeed())

		By("Reporting the drift in the shoot's health")
		Eventually(func() string {
			c := systemComponentsHealthy(shootNamespace)()
			if c.Status == v1beta1.ConditionFalse {
				// A check that ran before this poll (playing gardener-resource-manager) marked the
				// rewritten ManagedResource applied saw it outdated and turned the condition False;
				// Gardener's library never goes from False back to Progressing, so the condition's
				// history starts afresh. Without the drift check's threshold it stays False.
				forgetCondition(shootNamespace, v1beta1.ShootSystemComponentsHealthy)
			}
			return string(c.Status) + ": " + c.Message
		}).WithTimeout(timeout).Should(And(HavePrefix("Progressing"), ContainSubstring("not injected into "+ingressNamespace+"/"+gardenerFilter)))
	})

	It("removes everything it created when the Extension is deleted", func() {
		Expect(testClient.Delete(ctx(), ex)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(testClient.Get(ctx(), client.ObjectKeyFromObject(ex), &extensionsv1alpha1.Extension{}))
		}).WithTimeout(timeout).Should(BeTrue())

		Expect(apierrors.IsNotFound(testClient.Get(ctx(), client.ObjectKey{Namespace: shootNamespace, Name: constants.ACLManagedResourceName}, &resourcesv1alpha1.ManagedResource{}))).To(BeTrue())

		By("Keeping the shared filter for the other shoot on the gateway, without the deleted one")
		Eventually(func(g Gomega) {
			shared := sharedFilter(g, ingressNamespace)
			g.Expect(shared).NotTo(ContainSubstring("shoot--acl--a"))
			g.Expect(shared).To(ContainSubstring(".shoot--acl--c.svc.cluster.local"))
		}).WithTimeout(timeout).Should(Succeed())

		By("Removing the shared filter with the last ACL shoot of the gateway")
		c := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--acl--c", Name: "acl"}}
		Expect(testClient.Delete(ctx(), c)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(testClient.Get(ctx(), client.ObjectKeyFromObject(c), &extensionsv1alpha1.Extension{}))
		}).WithTimeout(timeout).Should(BeTrue())
		Eventually(func(g Gomega) {
			g.Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: ingressNamespace, Name: constants.ACLSharedManagedResourceName}, &resourcesv1alpha1.ManagedResource{})).To(Satisfy(apierrors.IsNotFound))
			secrets := &corev1.SecretList{}
			g.Expect(testClient.List(ctx(), secrets, client.InNamespace(ingressNamespace))).To(Succeed())
			g.Expect(secrets.Items).To(BeEmpty())
		}).WithTimeout(timeout).Should(Succeed())
		secrets := &corev1.SecretList{}
		Expect(testClient.List(ctx(), secrets, client.InNamespace(shootNamespace))).To(Succeed())
		Expect(secrets.Items).To(BeEmpty())
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: ingressNamespace, Name: "acl-" + shootNamespace}, &istionetworkingv1alpha3.EnvoyFilter{})).To(Satisfy(apierrors.IsNotFound))

		ef := &istionetworkingv1alpha3.EnvoyFilter{}
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: ingressNamespace, Name: gardenerFilter}, ef)).To(Succeed())
		Expect(injectedPatches(ef)).To(BeZero())
		Expect(ef.Spec.ConfigPatches).To(HaveLen(1))
		Expect(ef.Annotations).NotTo(HaveKey(constants.ACLPolicyHashAnnotation))
	})
})

// markManagedResourceHealthy plays gardener-resource-manager: the ManagedResource is applied and healthy.
func markManagedResourceHealthy(namespace, name string) {
	Eventually(func() error {
		mr := &resourcesv1alpha1.ManagedResource{}
		if err := testClient.Get(ctx(), client.ObjectKey{Namespace: namespace, Name: name}, mr); err != nil {
			return err
		}
		mr.Status.ObservedGeneration = mr.Generation
		now := metav1.Now()
		mr.Status.Conditions = []v1beta1.Condition{
			{Type: resourcesv1alpha1.ResourcesApplied, Status: v1beta1.ConditionTrue, LastTransitionTime: now, LastUpdateTime: now, Reason: "ApplySucceeded", Message: "applied"},
			{Type: resourcesv1alpha1.ResourcesHealthy, Status: v1beta1.ConditionTrue, LastTransitionTime: now, LastUpdateTime: now, Reason: "ResourcesHealthy", Message: "healthy"},
			{Type: resourcesv1alpha1.ResourcesProgressing, Status: v1beta1.ConditionFalse, LastTransitionTime: now, LastUpdateTime: now, Reason: "ResourcesRolledOut", Message: "rolled out"},
		}
		return testClient.Status().Update(ctx(), mr)
	}).Should(Succeed())
}

// forgetCondition removes a condition from the acl Extension's status.
func forgetCondition(namespace string, conditionType v1beta1.ConditionType) {
	Eventually(func() error {
		ex := &extensionsv1alpha1.Extension{}
		if err := testClient.Get(ctx(), client.ObjectKey{Namespace: namespace, Name: "acl"}, ex); err != nil {
			return err
		}
		ex.Status.Conditions = slices.DeleteFunc(ex.Status.Conditions, func(c v1beta1.Condition) bool { return c.Type == conditionType })
		return testClient.Status().Update(ctx(), ex)
	}).Should(Succeed())
}

// systemComponentsHealthy returns the acl Extension's SystemComponentsHealthy condition, playing
// gardener-resource-manager for its ManagedResource on every poll (the controller may update it).
func systemComponentsHealthy(namespace string) func() v1beta1.Condition {
	return func() v1beta1.Condition {
		markManagedResourceHealthy(namespace, constants.ACLManagedResourceName)
		ex := &extensionsv1alpha1.Extension{}
		Expect(testClient.Get(ctx(), client.ObjectKey{Namespace: namespace, Name: "acl"}, ex)).To(Succeed())
		for _, c := range ex.Status.Conditions {
			if c.Type == v1beta1.ShootSystemComponentsHealthy {
				return c
			}
		}
		return v1beta1.Condition{}
	}
}
