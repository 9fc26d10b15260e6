package validation

import (
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// ValidateFirewallTrafficSpec checks internal prefixes, SNAT rules and rate limits.
func ValidateFirewallTrafficSpec(spec firewallv1alpha1.FirewallTrafficSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, p := range spec.InternalPrefixes {
		allErrs = append(allErrs, validatePrefix(p, fldPath.Child("internalPrefixes").Index(i))...)
	}
	for i, r := range spec.EgressRules {
		idxPath := fldPath.Child("egressRules").Index(i)
		allErrs = append(allErrs, validateNetworkOrInterface(r.NetworkID, r.Interface, idxPath)...)
		if len(r.IPs) == 0 {
			allErrs = append(allErrs, field.Required(idxPath.Child("ips"), "at least one address to translate to"))
		}
		for j, ip := range r.IPs {
			if _, err := netip.ParseAddr(ip); err != nil {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("ips").Index(j), ip, "not an IP address"))
			}
		}
	}
	for i, r := range spec.RateLimits {
		idxPath := fldPath.Child("rateLimits").Index(i)
		allErrs = append(allErrs, validateNetworkOrInterface(r.NetworkID, r.Interface, idxPath)...)
		if r.Rate == 0 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("rate"), r.Rate, "must be at least 1 MiB/s"))
		}
	}
	return allErrs
}

// validatePrefix accepts a CIDR in canonical form only: "10.0.0.1/24" most
// likely hides a typo, and the firewall would silently widen it.
func validatePrefix(value string, fldPath *field.Path) field.ErrorList {
	p, err := netip.ParsePrefix(value)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, value, "not a CIDR")}
	}
	if p.Masked() != p {
		return field.ErrorList{field.Invalid(fldPath, value, "host bits set, did you mean "+p.Masked().String()+"?")}
	}
	return nil
}

func validateNetworkOrInterface(networkID, iface string, fldPath *field.Path) field.ErrorList {
	switch {
	case networkID == "" && iface == "":
		return field.ErrorList{field.Required(fldPath.Child("networkID"), "networkID or interface is required")}
	case networkID != "" && iface != "":
		return field.ErrorList{field.Invalid(fldPath.Child("interface"), iface, "set either networkID or interface, not both")}
	}
	return nil
}
