package validation

import (
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	allErrs = append(allErrs, validateTimeouts(d.Spec.FirewallTimeouts, time.Second, specPath)...)
	return fielderrors.Bound(allErrs, specPath)
}

// ValidateFirewallSet checks a FirewallSet, with at most strict.MaxErrors errors.
func ValidateFirewallSet(s *firewallv1alpha1.FirewallSet) field.ErrorList {
	specPath := field.NewPath("spec")
	allErrs := validateReplicasSelectorTemplate(s.Spec.Replicas, s.Spec.Selector, s.Spec.Template, specPath)
	allErrs = append(allErrs, ValidateDistance(s.Spec.Distance, specPath.Child("distance"))...)
	allErrs = append(allErrs, validateTimeouts(s.Spec.FirewallTimeouts, time.Second, specPath)...)
	return fielderrors.Bound(allErrs, specPath)
}

// validateTimeouts checks that each timeout set lies within [lowest, MaxTimeout].
func validateTimeouts(t firewallv1alpha1.FirewallTimeouts, lowest time.Duration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for name, d := range map[string]*metav1.Duration{"createTimeout": t.CreateTimeout, "healthTimeout": t.HealthTimeout, "distanceTimeout": t.DistanceTimeout} {
		if d != nil && (d.Duration < lowest || d.Duration > MaxTimeout) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(name), d.Duration.String(), fmt.Sprintf("must be within [%s, %s]", lowest, MaxTimeout)))
		}
	}
	sort.Slice(allErrs, func(i, j int) bool { return allErrs[i].Field < allErrs[j].Field })
	return allErrs
}

// validateReplicasSelectorTemplate checks what deployments and sets share; the
// selector must match the template's labels, or the owner would never see the
// Firewalls it creates and would create more forever.
func validateReplicasSelectorTemplate(replicas int32, selector map[string]string, tmpl firewallv1alpha1.FirewallTemplateSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if replicas < 0 || replicas > firewallv1alpha1.MaxReplicas {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("replicas"), replicas, fmt.Sprintf("must be within [0, %d]", firewallv1alpha1.MaxReplicas)))
	}
	if len(selector) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("selector"), "an empty selector would adopt every Firewall of the namespace"))
	} else if !labels.SelectorFromSet(selector).Matches(labels.Set(tmpl.Metadata.Labels)) {
		allErrs = append(allErrs, fielderrors.Invalid(fldPath.Child("template", "metadata", "labels"), fmt.Sprint(tmpl.Metadata.Labels), "must match the selector"))
	}
	allErrs = append(allErrs, ValidateFirewallSpec(tmpl.Spec, fldPath.Child("template", "spec"))...)
	return allErrs
}

// ValidateDistance checks a Firewall's or FirewallSet's distance.
func ValidateDistance(distance int32, fldPath *field.Path) field.ErrorList {
	if distance < firewallv1alpha1.ShortestDistance || distance > firewallv1alpha1.LongestDistance {
		return field.ErrorList{field.Invalid(fldPath, distance,
			fmt.Sprintf("must be within [%d, %d]", firewallv1alpha1.ShortestDistance, firewallv1alpha1.LongestDistance))}
	}
	return nil
}
