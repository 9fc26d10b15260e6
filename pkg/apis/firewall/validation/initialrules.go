package validation

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// validateInitialRules checks a policy that goes into the metal-api's
// firewall_rules: valid as a policy, and within what the metal-api's rules
// hold (TCP or UDP, at least one single port, CIDRs without exceptions).
func validateInitialRules(spec *fwv1alpha1.PolicySpec, fldPath *field.Path) field.ErrorList {
	allErrs := validatePolicySpec(spec, fldPath)
	if len(allErrs) > 0 {
		return allErrs
	}
	for i, r := range spec.Egress {
		allErrs = append(allErrs, metalExpressible(r.To, r.Ports, fldPath.Child("egress").Index(i), "to")...)
	}
	for i, r := range spec.Ingress {
		allErrs = append(allErrs, metalExpressible(r.From, r.Ports, fldPath.Child("ingress").Index(i), "from")...)
	}
	return allErrs
}

func metalExpressible(peers []fwv1alpha1.IPBlock, ports []fwv1alpha1.PolicyPort, fldPath *field.Path, peerField string) field.ErrorList {
	var allErrs field.ErrorList
	if len(ports) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("ports"), "the metal-api's rules name their ports"))
	}
	for i, p := range ports {
		pp := fldPath.Child("ports").Index(i)
		if proto := strings.ToUpper(p.Protocol); proto != "" && proto != "TCP" && proto != "UDP" {
			allErrs = append(allErrs, field.NotSupported(pp.Child("protocol"), p.Protocol, []string{"TCP", "UDP"}))
		}
		if p.Port == nil {
			allErrs = append(allErrs, field.Required(pp.Child("port"), "the metal-api's rules name their ports"))
		}
		if p.EndPort != nil && (p.Port == nil || *p.EndPort != *p.Port) {
			allErrs = append(allErrs, field.Forbidden(pp.Child("endPort"), "the metal-api's rules hold single ports, no ranges"))
		}
	}
	for i, b := range peers {
		if len(b.Except) > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(peerField).Index(i).Child("except"), "the metal-api's rules hold no exceptions"))
		}
	}
	return allErrs
}
