// Package validator is the garden-side admission of this extension: it
// refuses Shoots whose `firewall` or `acl` providerConfig is invalid, with the
// same checks and messages as the seed controllers, so a shoot owner learns of
// a mistake when applying the Shoot, not later from the Extension's status.
package validator

import (
	"context"
	"encoding/json"
	"net/http"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	aclvalidation "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
)

// Path is where the admission server serves the Validator.
const Path = "/webhooks/validate-shoot"

// Validator validates core.gardener.cloud/v1beta1 Shoots on CREATE and UPDATE.
type Validator struct {
	// ACLLimits are the operator's limits of the acl extension.
	ACLLimits aclvalidation.Limits
	// Reader reads the shoot's CloudProfile or NamespacedCloudProfile in the
	// garden; nil checks the providerConfigs' syntax only.
	Reader client.Reader
}

// Handle implements admission.Handler.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	shoot := &gardencorev1beta1.Shoot{}
	if err := json.Unmarshal(req.Object.Raw, shoot); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	errs := ValidateFirewallExtensions(shoot)
	errs = append(errs, ValidateACLExtensions(shoot, v.ACLLimits)...)
	if len(errs) > 0 {
		return invalid(shoot, errs)
	}
	var oldShoot *gardencorev1beta1.Shoot
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		oldShoot = &gardencorev1beta1.Shoot{}
		if err := json.Unmarshal(req.OldObject.Raw, oldShoot); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}
	if v.Reader != nil {
		errs, err := ValidateFirewallAgainstCloudProfile(ctx, v.Reader, shoot, oldShoot)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		if len(errs) > 0 {
			return invalid(shoot, errs)
		}
	}
	var warnings []string
	if oldShoot != nil {
		warnings = RollWarnings(oldShoot, shoot)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

func invalid(shoot *gardencorev1beta1.Shoot, errs field.ErrorList) admission.Response {
	return admission.Errored(http.StatusUnprocessableEntity, apierrors.NewInvalid(gardencorev1beta1.Kind("Shoot"), shoot.Name, errs))
}

// enabledExtensions calls validate with the providerConfig and its field path
// of every enabled extension of the given type.
func enabledExtensions(shoot *gardencorev1beta1.Shoot, extensionType string, validate func(raw []byte, fldPath *field.Path) field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	for i, ext := range shoot.Spec.Extensions {
		if ext.Type != extensionType || (ext.Disabled != nil && *ext.Disabled) {
			continue
		}
		var raw []byte
		if ext.ProviderConfig != nil {
			raw = ext.ProviderConfig.Raw
		}
		errs = append(errs, validate(raw, field.NewPath("spec", "extensions").Index(i).Child("providerConfig"))...)
	}
	return errs
}
