// Package fielderrors keeps validation errors small whatever the input: a
// value is quoted as an excerpt, and a list of errors is cut after
// strict.MaxErrors. An admission response, an Extension's status or an agent's
// log line then stays a few KB even for a hostile document.
package fielderrors

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
)

// Bound returns errs, or its first strict.MaxErrors errors and one that
// counts the rest, under fldPath. The count of a list bounded before (a part
// validated on its own) is carried over, so bounding twice changes nothing.
func Bound(errs field.ErrorList, fldPath *field.Path) field.ErrorList {
	var kept field.ErrorList
	more, summaries := 0, 0
	for _, e := range errs {
		if n, ok := omitted(e); ok {
			more += n
			summaries++
			continue
		}
		if len(kept) < strict.MaxErrors {
			kept = append(kept, e)
		} else {
			more++
		}
	}
	if more == 0 || (summaries == 1 && len(kept)+1 == len(errs) && errs[len(errs)-1].Field == fldPath.String()) {
		return errs
	}
	return append(kept, &field.Error{
		Type:     field.ErrorTypeInvalid,
		Field:    fldPath.String(),
		BadValue: field.OmitValueType{},
		Detail:   fmt.Sprintf(moreErrors, more),
		Origin:   boundOrigin,
	})
}

const (
	moreErrors  = "and %d more errors"
	boundOrigin = "fielderrors.Bound"
)

// omitted returns how many errors e stands for, if it is Bound's count.
func omitted(e *field.Error) (int, bool) {
	var n int
	if e.Origin != boundOrigin {
		return 0, false
	}
	if _, err := fmt.Sscanf(e.Detail, moreErrors, &n); err != nil {
		return 0, false
	}
	return n, true
}

// Invalid is field.Invalid quoting an excerpt of value.
func Invalid(fldPath *field.Path, value, detail string) *field.Error {
	return field.Invalid(fldPath, strict.Excerpt(value), detail)
}

// TooLong reports a string over limit bytes, quoting an excerpt of it.
// (field.TooLong omits the value; this one names it.)
func TooLong(fldPath *field.Path, value string, limit int) *field.Error {
	return Invalid(fldPath, value, fmt.Sprintf("may not be more than %d bytes", limit))
}

// NotSupported is field.NotSupported quoting an excerpt of value.
func NotSupported[T ~string](fldPath *field.Path, value T, supported []T) *field.Error {
	return field.NotSupported(fldPath, T(strict.Excerpt(string(value))), supported)
}

// Duplicate is field.Duplicate quoting an excerpt of value.
func Duplicate(fldPath *field.Path, value string) *field.Error {
	return field.Duplicate(fldPath, strict.Excerpt(value))
}
