package validation

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// validateSelfUpdate checks controllers.<name>.selfUpdate: only the firewall
// controller has one, its key file is a path to read, its health timeout
// within bounds.
func validateSelfUpdate(name string, s *agentconfigv1alpha1.SelfUpdate, fldPath *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	if name != "firewall" {
		return field.ErrorList{field.Forbidden(fldPath, "only controllers.firewall updates the agent")}
	}
	allErrs := validateReadPath(s.PublicKeyFile, fldPath.Child("publicKeyFile"))
	if t := s.HealthTimeout; t != nil && (t.Duration < agentconfigv1alpha1.MinHealthTimeout || t.Duration > agentconfigv1alpha1.MaxHealthTimeout) {
		allErrs = append(allErrs, fielderrors.Invalid(fldPath.Child("healthTimeout"), t.Duration.String(),
			fmt.Sprintf("must be between %s and %s", agentconfigv1alpha1.MinHealthTimeout, agentconfigv1alpha1.MaxHealthTimeout)))
	}
	return allErrs
}

// validateAgentRelease checks sources.static.agent as the Firewall's
// agentVersion, agentURL and agentSHA256 are checked.
func validateAgentRelease(r *agentconfigv1alpha1.AgentRelease, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch p := fldPath.Child("version"); {
	case r.Version == "":
		allErrs = append(allErrs, field.Required(p, "the version to run"))
	case len(r.Version) > validation.MaxAgentVersionLength:
		allErrs = append(allErrs, fielderrors.TooLong(p, r.Version, validation.MaxAgentVersionLength))
	case strings.ContainsFunc(r.Version, func(c rune) bool { return c <= ' ' || c == 0x7f }):
		allErrs = append(allErrs, fielderrors.Invalid(p, r.Version, "must not contain blanks or control characters"))
	}
	switch p := fldPath.Child("url"); {
	case r.URL == "":
		allErrs = append(allErrs, field.Required(p, "where the binary is downloaded from"))
	case len(r.URL) > validation.MaxAgentURLLength:
		allErrs = append(allErrs, fielderrors.TooLong(p, r.URL, validation.MaxAgentURLLength))
	default:
		if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
			strings.ContainsFunc(r.URL, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
			allErrs = append(allErrs, fielderrors.Invalid(p, r.URL, "must be an absolute http or https URL"))
		}
	}
	if !validation.IsSHA256Hex(r.SHA256) {
		allErrs = append(allErrs, fielderrors.Invalid(fldPath.Child("sha256"), r.SHA256, "must be 64 lowercase hex digits (a SHA-256)"))
	}
	return allErrs
}
