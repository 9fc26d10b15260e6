package acl

import (
	"context"
	"encoding/json"
	"net/http"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	aclcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/acl"
)

// ShootPath is where a garden-side admission server would serve ShootValidator.
const ShootPath = "/webhooks/validate-shoot-acl"

// ShootValidator refuses Shoots whose acl extension has an invalid providerConfig, with the
// same checks and messages as the controller, so a shoot owner learns of a mistake when
// applying the Shoot rather than from the Extension's status. It is meant for the garden
// (core.gardener.cloud/v1beta1 Shoots, CREATE and UPDATE); this repository does not deploy it yet.
type ShootValidator struct {
	Limits validation.Limits
}

// Handle implements admission.Handler.
func (v *ShootValidator) Handle(_ context.Context, req admission.Request) admission.Response {
	shoot := &gardencorev1beta1.Shoot{}
	if err := json.Unmarshal(req.Object.Raw, shoot); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if errs := ValidateShoot(shoot, v.Limits); len(errs) > 0 {
		return admission.Errored(http.StatusUnprocessableEntity, apierrors.NewInvalid(
			gardencorev1beta1.Kind("Shoot"), shoot.Name, errs))
	}
	return admission.Allowed("")
}

// ValidateShoot validates the providerConfig of every acl extension of the Shoot, except those
// that are disabled.
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
