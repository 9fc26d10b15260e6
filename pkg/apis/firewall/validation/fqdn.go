package validation

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// MaxDNSNameLength is the longest DNS name in presentation form, without
// the trailing dot (RFC 1035: 255 octets on the wire).
const MaxDNSNameLength = 253

// maxDNSLabelLength is the longest label of a DNS name.
const maxDNSLabelLength = 63

func validateFQDNs(selectors []fwv1alpha1.FQDNSelector, fldPath *field.Path) field.ErrorList {
	if len(selectors) > MaxPolicyFQDNs {
		return field.ErrorList{field.TooMany(fldPath, len(selectors), MaxPolicyFQDNs)}
	}
	var allErrs field.ErrorList
	for i := range selectors {
		allErrs = append(allErrs, ValidateFQDNSelector(&selectors[i], fldPath.Index(i))...)
	}
	return allErrs
}

// ValidateFQDNSelector checks that exactly one of matchName and matchPattern
// is set, and that it is a DNS name (with '*' in a pattern) as the
// firewall-controller accepts them: labels of letters, digits, '-' and '_',
// separated by single dots, an optional trailing dot, at most 253 characters
// and 63 per label.
func ValidateFQDNSelector(sel *fwv1alpha1.FQDNSelector, fldPath *field.Path) field.ErrorList {
	switch {
	case sel.MatchName == "" && sel.MatchPattern == "":
		return field.ErrorList{field.Required(fldPath, "matchName or matchPattern is required")}
	case sel.MatchName != "" && sel.MatchPattern != "":
		return field.ErrorList{fielderrors.Invalid(fldPath.Child("matchPattern"), sel.MatchPattern, "set either matchName or matchPattern, not both")}
	case sel.MatchName != "":
		return validateDNSName(sel.MatchName, false, fldPath.Child("matchName"))
	default:
		return validateDNSName(sel.MatchPattern, true, fldPath.Child("matchPattern"))
	}
}

func validateDNSName(name string, pattern bool, fldPath *field.Path) field.ErrorList {
	trimmed := strings.TrimSuffix(name, ".")
	if len(trimmed) > MaxDNSNameLength {
		return field.ErrorList{fielderrors.TooLong(fldPath, name, MaxDNSNameLength)}
	}
	chars := "letters, digits, '-' and '_'"
	if pattern {
		chars = "letters, digits, '-', '_' and '*'"
	}
	for _, label := range strings.Split(trimmed, ".") {
		switch {
		case label == "":
			return field.ErrorList{fielderrors.Invalid(fldPath, name, "must be labels separated by single dots, with at most one dot at the end")}
		case len(label) > maxDNSLabelLength:
			return field.ErrorList{fielderrors.Invalid(fldPath, name, "a label may not be longer than 63 characters")}
		case strings.ContainsFunc(label, func(c rune) bool { return !isDNSNameChar(c) && (!pattern || c != '*') }):
			return field.ErrorList{fielderrors.Invalid(fldPath, name, "a label may only contain "+chars)}
		}
	}
	return nil
}

func isDNSNameChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
