package envoyfilter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	jsonpatch "gomodules.xyz/jsonpatch/v2"
	istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/envoyfilter"
)

const shootNS = "shoot--p--a"

func extension(status string) *extensionsv1alpha1.Extension {
	ex := &extensionsv1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: shootNS},
		Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "acl"}},
	}
	if status != "" {
		ex.Status.ProviderStatus = &runtime.RawExtension{Raw: []byte(status)}
	}
	return ex
}

const allowStatus = `{"action":"ALLOW","type":"remote_ip","allowedCIDRs":["1.2.3.0/24","10.250.0.0/16"],"ingressNamespaces":["istio-ingress"],"hosts":["api.a.example.com"]}`

func request(ef *istionetworkingv1alpha3.EnvoyFilter) admission.Request {
	GinkgoHelper()
	raw, err := json.Marshal(ef)
	Expect(err).NotTo(HaveOccurred())
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Name: ef.Name, Namespace: ef.Namespace, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
	}}
}

func gardenerFilter(name string) *istionetworkingv1alpha3.EnvoyFilter {
	ef := &istionetworkingv1alpha3.EnvoyFilter{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "istio-ingress"}}
	ef.Spec.ConfigPatches = []*istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch{{ApplyTo: istioapinetworkingv1alpha3.EnvoyFilter_HTTP_ROUTE}}
	return ef
}

// apply applies the response's JSON patch to the request's object.
func apply(req admission.Request, resp admission.Response) *istionetworkingv1alpha3.EnvoyFilter {
	GinkgoHelper()
	Expect(resp.Allowed).To(BeTrue(), "not allowed: %v", resp.Result)
	doc := map[string]any{}
	Expect(json.Unmarshal(req.Object.Raw, &doc)).To(Succeed())
	for _, op := range resp.Patches {
		applyOp(doc, op)
	}
	raw, _ := json.Marshal(doc)
	ef := &istionetworkingv1alpha3.EnvoyFilter{}
	Expect(json.Unmarshal(raw, ef)).To(Succeed())
	return ef
}

// applyOp supports what PatchResponseFromRaw produces for configPatches: add/replace/remove of
// /spec/configPatches or an element of it. Anything deeper replaces the whole list from the
// fully patched object, which the tests avoid by comparing the list as a whole.
func applyOp(doc map[string]any, op jsonpatch.JsonPatchOperation) {
	GinkgoHelper()
	parts := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
	if len(parts) < 2 || parts[0] != "spec" || parts[1] != "configPatches" {
		return // metadata etc.
	}
	spec := doc["spec"].(map[string]any)
	list, _ := spec["configPatches"].([]any)
	switch {
	case len(parts) == 2:
		spec["configPatches"] = op.Value
	case len(parts) == 3:
		var i int
		if parts[2] == "-" {
			i = len(list)
		} else {
			Expect(json.Unmarshal([]byte(parts[2]), &i)).To(Succeed())
		}
		switch op.Operation {
		case "add":
			list = append(list[:i], append([]any{op.Value}, list[i:]...)...)
		case "replace":
			list[i] = op.Value
		case "remove":
			list = append(list[:i], list[i+1:]...)
		}
		spec["configPatches"] = list
	default:
		Fail(fmt.Sprintf("patch too deep for this test: %v", op))
	}
}

func mutator(objs ...client.Object) *envoyfilter.Mutator {
	return &envoyfilter.Mutator{Reader: fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).WithObjects(objs...).Build()}
}

var _ = Describe("Mutator", func() {
	ctx := context.Background()

	It("injects the shoot's policy as the controller renders it, idempotently", func() {
		req := request(gardenerFilter(shootNS + "-istio-tls-termination"))
		resp := mutator(extension(allowStatus)).Handle(ctx, req)
		ef := apply(req, resp)
		Expect(ef.Spec.ConfigPatches).To(HaveLen(3), "want Gardener's patch and the injected pair (remove, insert first)")
		Expect(envoy.IsInjected(ef.Spec.ConfigPatches[0])).To(BeFalse(), "want Gardener's patch first, got %v", ef.Spec.ConfigPatches)
		Expect(envoy.IsInjected(ef.Spec.ConfigPatches[1])).To(BeTrue(), "want Gardener's patch and the injected pair, got %v", ef.Spec.ConfigPatches)
		Expect(envoy.IsInjected(ef.Spec.ConfigPatches[2])).To(BeTrue(), "want Gardener's patch and the injected pair, got %v", ef.Spec.ConfigPatches)
		want, _ := envoy.NetworkFilterPatches([]string{"api.a.example.com"}, envoy.ShootPolicy{
			Namespace: shootNS, Action: "ALLOW", Type: "remote_ip",
			Allowed: []netip.Prefix{netip.MustParsePrefix("1.2.3.0/24"), netip.MustParsePrefix("10.250.0.0/16")},
		})
		Expect(envoy.ContainsAll(ef.Spec.ConfigPatches, want)).To(BeTrue(), "injected patch differs from the controller's: %v", ef.Spec.ConfigPatches[1])

		By("mutating the result again, which changes nothing")
		raw, _ := json.Marshal(ef)
		req.Object.Raw = raw
		resp = mutator(extension(allowStatus)).Handle(ctx, req)
		Expect(resp.Allowed).To(BeTrue())
		Expect(resp.Patches).To(BeEmpty(), "second pass changed something")
	})

	It("leaves other filters alone", func() {
		for _, name := range []string{"http-proxy", shootNS + "-apiserver-proxy"} {
			req := request(gardenerFilter(name))
			resp := mutator(extension(allowStatus)).Handle(ctx, req)
			Expect(resp.Allowed).To(BeTrue(), name)
			Expect(resp.Patches).To(BeEmpty(), name)
		}
		By("a shoot without ACL: nothing to inject, nothing to strip")
		req := request(gardenerFilter("shoot--p--other-istio-tls-termination"))
		resp := mutator(extension(allowStatus)).Handle(ctx, req)
		Expect(resp.Allowed).To(BeTrue())
		Expect(resp.Patches).To(BeEmpty())
	})

	It("strips the injected patch when the policy is gone", func() {
		req := request(gardenerFilter(shootNS + "-istio-tls-termination"))
		ef := apply(req, mutator(extension(allowStatus)).Handle(ctx, req))
		raw, _ := json.Marshal(ef)
		req.Object.Raw = raw

		for name, m := range map[string]*envoyfilter.Mutator{
			"no extension":   mutator(),
			"status cleared": mutator(extension("")),
			"extension deleting": mutator(func() client.Object {
				ex := extension(allowStatus)
				ex.Finalizers = []string{"x"}
				now := metav1.Now()
				ex.DeletionTimestamp = &now
				return ex
			}()),
		} {
			got := apply(req, m.Handle(ctx, req))
			Expect(got.Spec.ConfigPatches).To(HaveLen(1), "%s: want only Gardener's patch", name)
			Expect(envoy.IsInjected(got.Spec.ConfigPatches[0])).To(BeFalse(), "%s: want only Gardener's patch, got %v", name, got.Spec.ConfigPatches)
		}
	})

	It("is registered for the per-shoot TLS termination filters of the istio-ingress namespaces only, failing open", func() {
		cfg := envoyfilter.MutatingWebhookConfiguration(admissionregistrationClientConfig())
		w := cfg.Webhooks[0]
		Expect(*w.FailurePolicy).To(BeEquivalentTo("Ignore"))
		Expect(w.NamespaceSelector.MatchLabels).To(HaveKeyWithValue("gardener.cloud/role", "istio-ingress"))
		Expect(w.MatchConditions).To(HaveLen(1))
		Expect(w.MatchConditions[0].Expression).To(ContainSubstring("-istio-tls-termination"))
	})
})
