package validation

import (
	"path"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// ValidateFirewall checks a Firewall.
func ValidateFirewall(fw *firewallv1alpha1.Firewall) field.ErrorList {
	return ValidateFirewallSpec(fw.Spec, field.NewPath("spec"))
}

// ValidateFirewallSpec checks the machine, the traffic rules and the userdata.
func ValidateFirewallSpec(spec firewallv1alpha1.FirewallSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, f := range []struct{ name, value string }{{"size", spec.Size}, {"image", spec.Image}, {"partition", spec.Partition}, {"project", spec.Project}} {
		if f.value == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child(f.name), ""))
		}
	}
	if len(spec.Networks) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("networks"), "at least one network"))
	}
	seenNetworks := sets.New[string]()
	for i, n := range spec.Networks {
		if n == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("networks").Index(i), ""))
		} else if seenNetworks.Has(n) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Child("networks").Index(i), n))
		}
		seenNetworks.Insert(n)
	}
	allErrs = append(allErrs, ValidateFirewallTrafficSpec(&spec.FirewallTrafficSpec, fldPath, true)...)
	allErrs = append(allErrs, validateUserdataContents(spec.UserdataContents, fldPath.Child("userdataContents"))...)
	return allErrs
}

func validateUserdataContents(contents []firewallv1alpha1.UserdataContent, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, c := range contents {
		idxPath := fldPath.Index(i)
		switch {
		case c.Path == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("path"), ""))
		case !path.IsAbs(c.Path) || path.Clean(c.Path) != c.Path:
			allErrs = append(allErrs, field.Invalid(idxPath.Child("path"), c.Path, "must be an absolute, clean path"))
		case seen.Has(c.Path):
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("path"), c.Path))
		}
		seen.Insert(c.Path)
		switch {
		case c.Content != "" && c.SecretRef != nil:
			allErrs = append(allErrs, field.Invalid(idxPath.Child("secretRef"), c.SecretRef.Name, "set either content or secretRef, not both"))
		case c.SecretRef != nil && (c.SecretRef.Name == "" || c.SecretRef.Key == ""):
			allErrs = append(allErrs, field.Required(idxPath.Child("secretRef"), "name and key are required"))
		}
		if c.Mode != nil && (*c.Mode < 0 || *c.Mode > 0o777) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("mode"), *c.Mode, "must be between 0 and 0777 (511)"))
		}
	}
	return allErrs
}
