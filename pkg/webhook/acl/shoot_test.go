package acl_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	aclwebhook "github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/acl"
)

func shootRequest(t *testing.T, exts ...gardencorev1beta1.Extension) admission.Request {
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "garden-p"}}
	shoot.Spec.Extensions = exts
	raw, err := json.Marshal(shoot)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}}
}

func TestShootValidator(t *testing.T) {
	v := &aclwebhook.ShootValidator{}
	good := gardencorev1beta1.Extension{Type: "acl", ProviderConfig: &runtime.RawExtension{Raw: []byte(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24"]}}`)}}
	bad := gardencorev1beta1.Extension{Type: "acl", ProviderConfig: &runtime.RawExtension{Raw: []byte(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.400/24"]}}`)}}
	other := gardencorev1beta1.Extension{Type: "shoot-dns-service", ProviderConfig: &runtime.RawExtension{Raw: []byte(`{"whatever":1}`)}}

	if resp := v.Handle(context.Background(), shootRequest(t, other, good)); !resp.Allowed {
		t.Fatalf("refused a valid shoot: %v", resp.Result)
	}
	resp := v.Handle(context.Background(), shootRequest(t, other, bad))
	if resp.Allowed {
		t.Fatal("accepted an invalid acl providerConfig")
	}
	if msg := resp.Result.Message; !strings.Contains(msg, "spec.extensions[1].providerConfig.rule.cidrs[0]") || !strings.Contains(msg, "1.2.3.400/24") {
		t.Fatalf("message does not name field and value: %s", msg)
	}
	bad.Disabled = ptr.To(true)
	if resp := v.Handle(context.Background(), shootRequest(t, bad)); !resp.Allowed {
		t.Fatalf("a disabled extension is not validated: %v", resp.Result)
	}
}
