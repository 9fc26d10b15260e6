package validator

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// ValidateACLExtensions validates the providerConfig of every enabled `acl` extension.
func ValidateACLExtensions(shoot *gardencorev1beta1.Shoot, limits validation.Limits) field.ErrorList {
	return enabledExtensions(shoot, constants.ACLExtensionType, func(raw []byte, fldPath *field.Path) field.ErrorList {
		_, errs := validation.ParseAt(raw, limits, fldPath)
		return errs
	})
}
