package envoyfilter_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
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

func request(t *testing.T, ef *istionetworkingv1alpha3.EnvoyFilter) admission.Request {
	raw, err := json.Marshal(ef)
	if err != nil {
		t.Fatal(err)
	}
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
func apply(t *testing.T, req admission.Request, resp admission.Response) *istionetworkingv1alpha3.EnvoyFilter {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("not allowed: %v", resp.Result)
	}
	doc := map[string]any{}
	if err := json.Unmarshal(req.Object.Raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, op := range resp.Patches {
		applyOp(t, doc, op)
	}
	raw, _ := json.Marshal(doc)
	ef := &istionetworkingv1alpha3.EnvoyFilter{}
	if err := json.Unmarshal(raw, ef); err != nil {
		t.Fatal(err)
	}
	return ef
}

// applyOp supports what PatchResponseFromRaw produces for configPatches: add/replace/remove of
// /spec/configPatches or an element of it. Anything deeper replaces the whole list from the
// fully patched object, which the tests avoid by comparing the list as a whole.
func applyOp(t *testing.T, doc map[string]any, op jsonpatch.JsonPatchOperation) {
	t.Helper()
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
		} else if err := json.Unmarshal([]byte(parts[2]), &i); err != nil {
			t.Fatal(err)
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
		t.Fatalf("patch too deep for this test: %v", op)
	}
}

func mutator(objs ...client.Object) *envoyfilter.Mutator {
	return &envoyfilter.Mutator{Reader: fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).WithObjects(objs...).Build()}
}

func TestInjectsThePolicy(t *testing.T) {
	req := request(t, gardenerFilter(shootNS+"-istio-tls-termination"))
	resp := mutator(extension(allowStatus)).Handle(context.Background(), req)
	ef := apply(t, req, resp)
	if len(ef.Spec.ConfigPatches) != 2 || !envoy.IsInjected(ef.Spec.ConfigPatches[1]) {
		t.Fatalf("want Gardener's patch and one injected patch, got %v", ef.Spec.ConfigPatches)
	}
	want, _ := envoy.NetworkFilterPatches([]string{"api.a.example.com"}, envoy.ShootPolicy{
		Namespace: shootNS, Action: "ALLOW", Type: "remote_ip",
		Allowed: []netip.Prefix{netip.MustParsePrefix("1.2.3.0/24"), netip.MustParsePrefix("10.250.0.0/16")},
	})
	if !envoy.ContainsAll(ef.Spec.ConfigPatches, want) {
		t.Fatalf("injected patch differs from the controller's: %v", ef.Spec.ConfigPatches[1])
	}

	// Mutating the result again changes nothing: the webhook is idempotent.
	raw, _ := json.Marshal(ef)
	req.Object.Raw = raw
	resp = mutator(extension(allowStatus)).Handle(context.Background(), req)
	if !resp.Allowed || len(resp.Patches) != 0 {
		t.Fatalf("second pass changed something: %v", resp.Patches)
	}
}

func TestLeavesOtherFiltersAlone(t *testing.T) {
	for _, name := range []string{"http-proxy", shootNS + "-apiserver-proxy"} {
		req := request(t, gardenerFilter(name))
		resp := mutator(extension(allowStatus)).Handle(context.Background(), req)
		if !resp.Allowed || len(resp.Patches) != 0 {
			t.Fatalf("%s: %v", name, resp)
		}
	}
	// A shoot without ACL: nothing to inject, nothing to strip.
	req := request(t, gardenerFilter("shoot--p--other-istio-tls-termination"))
	resp := mutator(extension(allowStatus)).Handle(context.Background(), req)
	if !resp.Allowed || len(resp.Patches) != 0 {
		t.Fatalf("%v", resp)
	}
}

func TestStripsWhenThePolicyIsGone(t *testing.T) {
	req := request(t, gardenerFilter(shootNS+"-istio-tls-termination"))
	ef := apply(t, req, mutator(extension(allowStatus)).Handle(context.Background(), req))
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
		got := apply(t, req, m.Handle(context.Background(), req))
		if len(got.Spec.ConfigPatches) != 1 || envoy.IsInjected(got.Spec.ConfigPatches[0]) {
			t.Errorf("%s: want only Gardener's patch, got %v", name, got.Spec.ConfigPatches)
		}
	}
}

func TestRegistrationScope(t *testing.T) {
	cfg := envoyfilter.MutatingWebhookConfiguration(admissionregistrationClientConfig())
	w := cfg.Webhooks[0]
	if *w.FailurePolicy != "Ignore" || w.NamespaceSelector.MatchLabels["gardener.cloud/role"] != "istio-ingress" ||
		len(w.MatchConditions) != 1 || !strings.Contains(w.MatchConditions[0].Expression, "-istio-tls-termination") {
		t.Fatalf("unexpected scope: %+v", w)
	}
}
