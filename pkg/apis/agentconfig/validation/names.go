package validation

import (
	"fmt"
	"path/filepath"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// MaxPathLength is the longest path in the config (Linux's PATH_MAX).
const MaxPathLength = 4096

// ValidateName checks the firewall's name: it names the Firewall the agent
// reads in the seed and its FirewallMonitor in the shoot, so it must be a
// Kubernetes object name. fromHostname tells that name is not set and the
// hostname stands in.
func ValidateName(name string, fromHostname bool) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range apivalidation.IsDNS1123Subdomain(name) {
		if fromHostname {
			msg = "name is not set, and the hostname is no Kubernetes object name: " + msg + "; set name"
		}
		allErrs = append(allErrs, fielderrors.Invalid(field.NewPath("name"), name, msg))
	}
	return allErrs
}

// validateNamespace checks a namespace name.
func validateNamespace(ns string, fldPath *field.Path) field.ErrorList {
	if ns == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	for _, msg := range apivalidation.IsDNS1123Label(ns) {
		allErrs = append(allErrs, fielderrors.Invalid(fldPath, ns, "not a namespace name: "+msg))
	}
	return allErrs
}

// validateObjectName checks the name of an object such as a Secret.
func validateObjectName(name string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range apivalidation.IsDNS1123Subdomain(name) {
		allErrs = append(allErrs, fielderrors.Invalid(fldPath, name, msg))
	}
	return allErrs
}

// validateReadPath checks a path the agent only reads: absolute, clean (no
// "..") and without control characters.
func validateReadPath(p string, fldPath *field.Path) field.ErrorList {
	switch {
	case p == "":
		return nil
	case len(p) > MaxPathLength:
		return field.ErrorList{fielderrors.TooLong(fldPath, p, MaxPathLength)}
	case !filepath.IsAbs(p):
		return field.ErrorList{fielderrors.Invalid(fldPath, p, "must be an absolute path")}
	case filepath.Clean(p) != p || strings.Contains(p, ".."):
		return field.ErrorList{fielderrors.Invalid(fldPath, p, "must be a clean path, without '..', '.' or '//'")}
	case strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return field.ErrorList{fielderrors.Invalid(fldPath, p, "must not contain control characters")}
	}
	return nil
}

// writtenFiles checks the paths of the files the agent writes, as root: each
// must lie in dir, and no two may be the same file, so that the config cannot
// make the agent write anywhere else (e.g. ../../etc/cron.d/x).
type writtenFiles struct {
	dir  string
	seen map[string]*field.Path
}

func (w writtenFiles) check(p string, fldPath *field.Path) field.ErrorList {
	if errs := validateReadPath(p, fldPath); len(errs) > 0 || p == "" {
		return errs
	}
	prefix := strings.TrimSuffix(w.dir, "/") + "/"
	if !strings.HasPrefix(p, prefix) {
		return field.ErrorList{fielderrors.Invalid(fldPath, p, fmt.Sprintf("the agent writes this file: it must be inside %s, the folder of the config file", w.dir))}
	}
	if other, ok := w.seen[p]; ok {
		return field.ErrorList{fielderrors.Invalid(fldPath, p, fmt.Sprintf("the same file as %s: the agent writes both", other))}
	}
	w.seen[p] = fldPath
	return nil
}
