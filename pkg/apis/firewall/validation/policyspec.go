package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// Protocols the firewall enforces in a PolicyPort. An empty protocol means TCP.
var Protocols = []string{"TCP", "UDP", "SCTP"}

// ValidatePolicySpec checks the egress and ingress rules of a
// ClusterwideNetworkPolicy (or of the agent's static cwnp source) and returns
// every problem found, each naming its field path and value, at most
// strict.MaxErrors of them and a count of the rest: they go into the policy's
// status.
func ValidatePolicySpec(spec *fwv1alpha1.PolicySpec, fldPath *field.Path) field.ErrorList {
	return fielderrors.Bound(validatePolicySpec(spec, fldPath), fldPath)
}

func validatePolicySpec(spec *fwv1alpha1.PolicySpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(spec.Description) > MaxPolicyDescriptionLength {
		allErrs = append(allErrs, fielderrors.TooLong(fldPath.Child("description"), spec.Description, MaxPolicyDescriptionLength))
	}
	if p := fldPath.Child("egress"); len(spec.Egress) > MaxPolicyRules {
		allErrs = append(allErrs, field.TooMany(p, len(spec.Egress), MaxPolicyRules))
	} else {
		for i, rule := range spec.Egress {
			rulePath := p.Index(i)
			allErrs = append(allErrs, validatePeers(rule.To, rulePath.Child("to"))...)
			allErrs = append(allErrs, validateFQDNs(rule.ToFQDNs, rulePath.Child("toFQDNs"))...)
			if len(rule.To) == 0 && len(rule.ToFQDNs) == 0 {
				allErrs = append(allErrs, field.Required(rulePath.Child("to"), "an egress rule needs at least one destination"))
			}
			allErrs = append(allErrs, validatePorts(rule.Ports, rulePath.Child("ports"))...)
		}
	}
	if p := fldPath.Child("ingress"); len(spec.Ingress) > MaxPolicyRules {
		allErrs = append(allErrs, field.TooMany(p, len(spec.Ingress), MaxPolicyRules))
	} else {
		for i, rule := range spec.Ingress {
			rulePath := p.Index(i)
			allErrs = append(allErrs, validatePeers(rule.From, rulePath.Child("from"))...)
			if len(rule.From) == 0 {
				allErrs = append(allErrs, field.Required(rulePath.Child("from"), "an ingress rule needs at least one source"))
			}
			allErrs = append(allErrs, validatePorts(rule.Ports, rulePath.Child("ports"))...)
		}
	}
	return allErrs
}

func validatePeers(blocks []fwv1alpha1.IPBlock, fldPath *field.Path) field.ErrorList {
	if len(blocks) > MaxPolicyPeers {
		return field.ErrorList{field.TooMany(fldPath, len(blocks), MaxPolicyPeers)}
	}
	var allErrs field.ErrorList
	for j := range blocks {
		allErrs = append(allErrs, ValidateIPBlock(&blocks[j], fldPath.Index(j))...)
	}
	return allErrs
}

// ValidateIPBlock checks that CIDR is a network and that every Except is a
// network of the same family inside it.
func ValidateIPBlock(block *fwv1alpha1.IPBlock, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	outer, err := cidr.Parse(block.CIDR)
	if err != nil {
		allErrs = append(allErrs, fielderrors.Invalid(fldPath.Child("cidr"), block.CIDR, "invalid CIDR"))
	}
	if len(block.Except) > MaxPolicyExcepts {
		return append(allErrs, field.TooMany(fldPath.Child("except"), len(block.Except), MaxPolicyExcepts))
	}
	for i, except := range block.Except {
		exceptPath := fldPath.Child("except").Index(i)
		inner, err := cidr.Parse(except)
		switch {
		case err != nil:
			allErrs = append(allErrs, fielderrors.Invalid(exceptPath, except, "invalid CIDR"))
		case !outer.IsValid():
			// The outer CIDR is already reported.
		case inner.Addr().Is4() != outer.Addr().Is4() || inner.Bits() < outer.Bits() || !outer.Contains(inner.Addr()):
			allErrs = append(allErrs, field.Invalid(exceptPath, except, fmt.Sprintf("must lie inside cidr %q", block.CIDR)))
		}
	}
	return allErrs
}

func validatePorts(ports []fwv1alpha1.PolicyPort, fldPath *field.Path) field.ErrorList {
	if len(ports) > MaxPolicyPorts {
		return field.ErrorList{field.TooMany(fldPath, len(ports), MaxPolicyPorts)}
	}
	var allErrs field.ErrorList
	for i, port := range ports {
		portPath := fldPath.Index(i)
		if port.Protocol != "" && !isProtocol(port.Protocol) {
			allErrs = append(allErrs, fielderrors.NotSupported(portPath.Child("protocol"), port.Protocol, Protocols))
		}
		if port.Port != nil && (*port.Port < 1 || *port.Port > 65535) {
			allErrs = append(allErrs, field.Invalid(portPath.Child("port"), *port.Port, "must be between 1 and 65535"))
		}
		if port.EndPort != nil {
			switch {
			case port.Port == nil:
				allErrs = append(allErrs, field.Required(portPath.Child("port"), "endPort needs port"))
			case *port.EndPort < 1 || *port.EndPort > 65535:
				allErrs = append(allErrs, field.Invalid(portPath.Child("endPort"), *port.EndPort, "must be between 1 and 65535"))
			case *port.EndPort < *port.Port:
				allErrs = append(allErrs, field.Invalid(portPath.Child("endPort"), *port.EndPort, fmt.Sprintf("must not be below port %d", *port.Port)))
			}
		}
	}
	return allErrs
}

func isProtocol(p string) bool {
	for _, known := range Protocols {
		if p == known {
			return true
		}
	}
	return false
}
