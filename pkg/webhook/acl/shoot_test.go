package acl_test

import (
	"strings"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	aclwebhook "github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/acl"
)

func shoot(exts ...gardencorev1beta1.Extension) *gardencorev1beta1.Shoot {
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "garden-p"}}
	s.Spec.Extensions = exts
	return s
}

func TestValidateShoot(t *testing.T) {
	good := gardencorev1beta1.Extension{Type: "acl", ProviderConfig: &runtime.RawExtension{Raw: []byte(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24"]}}`)}}
	bad := gardencorev1beta1.Extension{Type: "acl", ProviderConfig: &runtime.RawExtension{Raw: []byte(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.400/24"]}}`)}}
	other := gardencorev1beta1.Extension{Type: "shoot-dns-service", ProviderConfig: &runtime.RawExtension{Raw: []byte(`{"whatever":1}`)}}

	if errs := aclwebhook.ValidateShoot(shoot(other, good), validation.Limits{}); len(errs) > 0 {
		t.Fatalf("refused a valid shoot: %v", errs)
	}
	errs := aclwebhook.ValidateShoot(shoot(other, bad), validation.Limits{})
	if len(errs) == 0 {
		t.Fatal("accepted an invalid acl providerConfig")
	}
	if msg := errs.ToAggregate().Error(); !strings.Contains(msg, "spec.extensions[1].providerConfig.rule.cidrs[0]") || !strings.Contains(msg, "1.2.3.400/24") {
		t.Fatalf("message does not name field and value: %s", msg)
	}
	bad.Disabled = ptr.To(true)
	if errs := aclwebhook.ValidateShoot(shoot(bad), validation.Limits{}); len(errs) > 0 {
		t.Fatalf("a disabled extension is not validated: %v", errs)
	}
}
