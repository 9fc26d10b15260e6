package providerfirewall_test

import (
	"context"
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/providerfirewall"
)

// FuzzHandle: no object panics the webhook; a refusal stays short, and what it lets
// through with a patch is the object with 0 replicas and nothing else of it changed.
func FuzzHandle(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"firewall"},"spec":{"replicas":1}}`,
		`{"metadata":{"annotations":{"a":"b"}},"spec":{"replicas":3,"template":{}},"status":{"readyReplicas":0}}`,
		`{"spec":{"replicas":"1"}}`, `{"spec":{"replicas":1.5}}`, `{"spec":null}`, `{"status":{"readyReplicas":"x"}}`,
		`{"spec":{"replicas":2}}`, `{"metadata":{"annotations":null},"spec":{"replicas":1}}`, `[]`, `{`, `null`, "\xff",
	} {
		f.Add([]byte(seed))
	}
	scheme := runtime.NewScheme()
	if err := kubernetes.AddSeedSchemeToScheme(scheme); err != nil {
		f.Fatal(err)
	}
	ex := &extensionsv1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: "firewall", Namespace: "shoot--p--a"},
		Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "firewall"}},
	}
	m := &providerfirewall.Mutator{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(ex).Build()}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Name: "firewall", Namespace: "shoot--p--a", Operation: admissionv1.Update, Object: runtime.RawExtension{Raw: raw},
		}}
		resp := m.Handle(context.Background(), req)
		if !resp.Allowed {
			if resp.Result == nil || len(resp.Result.Message) > 1024 {
				t.Fatalf("a refusal without a short message: %+v", resp.Result)
			}
			return
		}
		if len(resp.Patches) == 0 {
			return
		}
		ops, err := json.Marshal(resp.Patches)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := jsonpatch.DecodePatch(ops)
		if err != nil {
			t.Fatal(err)
		}
		out, err := patch.Apply(raw)
		if err != nil {
			t.Fatalf("the patch does not apply to what it was made for: %v", err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(out); err != nil {
			t.Fatal(err)
		}
		if r, _, err := unstructured.NestedInt64(obj.Object, "spec", "replicas"); err != nil || r != 0 {
			t.Fatalf("patched to replicas %d (%v)", r, err)
		}
	})
}
