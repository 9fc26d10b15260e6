package acl

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	aclcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/acl"
)

// ValidateShoot validates the providerConfig of every acl extension of the Shoot, except those
// that are disabled. The garden admission (pkg/webhook/shoot) serves it together with the
// firewall extension's check.
func ValidateShoot(shoot *gardencorev1beta1.Shoot, limits validation.Limits) field.ErrorList {
	var errs field.ErrorList
	for i, ext := range shoot.Spec.Extensions {
		if ext.Type != aclcontroller.Type || (ext.Disabled != nil && *ext.Disabled) {
			continue
		}
		var raw []byte
		if ext.ProviderConfig != nil {
			raw = ext.ProviderConfig.Raw
		}
		_, e := validation.ParseAt(raw, limits, field.NewPath("spec", "extensions").Index(i).Child("providerConfig"))
		errs = append(errs, e...)
	}
	return errs
}
