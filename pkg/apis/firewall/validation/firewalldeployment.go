package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// ValidateFirewallDeployment checks a FirewallDeployment. At most
// strict.MaxErrors errors are returned (and a count of the rest).
func ValidateFirewallDeployment(d *firewallv1alpha1.FirewallDeployment) field.ErrorList {
	specPath := field.NewPath("spec")
	allErrs := validateReplicasSelectorTemplate(d.Spec.Replicas, d.Spec.Selector, d.Spec.Template, specPath)
	switch d.Spec.Strategy {
	case "", firewallv1alpha1.StrategyRollingUpdate, firewallv1alpha1.StrategyRecreate:
	default:
		allErrs = append(allErrs, fielderrors.NotSupported(specPath.Child("strategy"), d.Spec.Strategy,
			[]firewallv1alpha1.UpdateStrategy{firewallv1alpha1.StrategyRollingUpdate, firewallv1alpha1.StrategyRecreate}))
	}
	return fielderrors.Bound(allErrs, specPath)
}

// ValidateFirewallSet checks a FirewallSet, with at most strict.MaxErrors errors.
func ValidateFirewallSet(s *firewallv1alpha1.FirewallSet) field.ErrorList {
	specPath := field.NewPath("spec")
	return fielderrors.Bound(validateReplicasSelectorTemplate(s.Spec.Replicas, s.Spec.Selector, s.Spec.Template, specPath), specPath)
}

// validateReplicasSelectorTemplate checks what deployments and sets share; the
// selector must match the template's labels, or the owner would never see the
// Firewalls it creates and would create more forever.
func validateReplicasSelectorTemplate(replicas int32, selector map[string]string, tmpl firewallv1alpha1.FirewallTemplateSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if replicas < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("replicas"), replicas, "must not be negative"))
	}
	if len(selector) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("selector"), "an empty selector would adopt every Firewall of the namespace"))
	} else if !labels.SelectorFromSet(selector).Matches(labels.Set(tmpl.Metadata.Labels)) {
		allErrs = append(allErrs, fielderrors.Invalid(fldPath.Child("template", "metadata", "labels"), fmt.Sprint(tmpl.Metadata.Labels), "must match the selector"))
	}
	allErrs = append(allErrs, ValidateFirewallSpec(tmpl.Spec, fldPath.Child("template", "spec"))...)
	return allErrs
}
