package validation

import (
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// Bounds of the metal source.
const (
	// MaxMetalURLLength bounds the metal-api URL.
	MaxMetalURLLength = 2048
	// MaxHMACBytes bounds the HMAC key, inline or in its file.
	MaxHMACBytes = 4096
)

// validateMetalSource checks the metal-api source: an absolute https URL
// (http only with allowHTTP) without credentials, exactly one of hmac and
// hmacFile, a view key, the project's metal ID.
func validateMetalSource(s *agentconfigv1alpha1.MetalSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	urlPath := fldPath.Child("url")
	switch u, err := url.Parse(s.URL); {
	case s.URL == "":
		allErrs = append(allErrs, field.Required(urlPath, "the metal-api's base URL"))
	case len(s.URL) > MaxMetalURLLength:
		allErrs = append(allErrs, fielderrors.TooLong(urlPath, s.URL, MaxMetalURLLength))
	case err != nil, u.Scheme != "https" && u.Scheme != "http", u.Host == "", u.RawQuery != "", u.Fragment != "":
		allErrs = append(allErrs, fielderrors.Invalid(urlPath, s.URL, "must be an absolute http or https URL without query or fragment"))
	case u.User != nil:
		// Not quoted: the user information may be a secret.
		allErrs = append(allErrs, field.Invalid(urlPath, "(redacted)", "must not carry user information"))
	case u.Scheme == "http" && !s.AllowHTTP:
		allErrs = append(allErrs, fielderrors.Invalid(urlPath, s.URL, "must be https: the signed requests and the rules would cross the network in the clear (allowHTTP: true accepts http)"))
	}
	switch {
	case s.HMAC == "" && s.HMACFile == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("hmacFile"), "hmacFile or hmac: the metal-api answers nothing without its HMAC"))
	case s.HMAC != "" && s.HMACFile != "":
		allErrs = append(allErrs, field.Invalid(fldPath.Child("hmac"), "(redacted)", "set hmac or hmacFile, not both"))
	case s.HMAC != "":
		// The key's value is never quoted in an error.
		switch {
		case len(s.HMAC) > MaxHMACBytes:
			allErrs = append(allErrs, field.TooLong(fldPath.Child("hmac"), "(redacted)", MaxHMACBytes))
		case strings.TrimSpace(s.HMAC) == "":
			allErrs = append(allErrs, field.Required(fldPath.Child("hmac"), "the key is blank"))
		case strings.ContainsFunc(s.HMAC, func(r rune) bool { return r < ' ' || r == 0x7f }):
			allErrs = append(allErrs, field.Invalid(fldPath.Child("hmac"), "(redacted)", "must not contain control characters"))
		}
	default:
		allErrs = append(allErrs, validateReadPath(s.HMACFile, fldPath.Child("hmacFile"))...)
	}
	if s.Type != "" && s.Type != agentconfigv1alpha1.MetalAuthTypeView {
		allErrs = append(allErrs, fielderrors.NotSupported(fldPath.Child("type"), s.Type, []string{agentconfigv1alpha1.MetalAuthTypeView}))
	}
	allErrs = append(allErrs, validation.ValidateMetalID(s.ProjectID, fldPath.Child("projectID"))...)
	return allErrs
}
