package validator

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// ValidateFirewallExtensions validates the providerConfig of every enabled `firewall` extension.
func ValidateFirewallExtensions(shoot *gardencorev1beta1.Shoot) field.ErrorList {
	return enabledExtensions(shoot, constants.FirewallExtensionType, func(raw []byte, fldPath *field.Path) field.ErrorList {
		_, errs := validation.DecodeFirewallExtensionConfigAt(raw, fldPath)
		return errs
	})
}
