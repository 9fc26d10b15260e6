package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// ValidateMetalID checks a metal ID (size, image, partition, project,
// network): 1-128 letters, digits, '.', '-' and '_', starting with a letter or
// digit. metal-api bounds IDs to 128 characters; the character set is what
// its IDs (c1-xlarge-x86, firewall-ubuntu-3.0, fra-equ01, UUIDs) use, and it
// keeps control characters and blanks out of the machine's allocation.
func ValidateMetalID(id string, fldPath *field.Path) field.ErrorList {
	switch {
	case id == "":
		return field.ErrorList{field.Required(fldPath, "")}
	case len(id) > MaxMetalIDLength:
		return field.ErrorList{fielderrors.TooLong(fldPath, id, MaxMetalIDLength)}
	case !isMetalID(id):
		return field.ErrorList{fielderrors.Invalid(fldPath, id, "must consist of letters, digits, '.', '-' and '_', and start with a letter or digit")}
	}
	return nil
}

func isMetalID(s string) bool {
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '-' || c == '_'):
		default:
			return false
		}
	}
	return true
}

// isPrintable tells whether s holds no control characters (newlines
// included), so that it cannot start a new line in a file it is written to.
func isPrintable(s string) bool {
	for _, c := range s {
		if c < ' ' || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			return false
		}
	}
	return true
}
