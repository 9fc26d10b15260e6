package validation

import (
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// ValidateFirewallTrafficSpec checks internal prefixes, SNAT rules and rate
// limits. resolveNetworks tells whether the caller can map a metal network ID to
// an interface; without that, rules must name the interface.
func ValidateFirewallTrafficSpec(spec *fwv1alpha1.FirewallTrafficSpec, fldPath *field.Path, resolveNetworks bool) field.ErrorList {
	var allErrs field.ErrorList
	for i, prefix := range spec.InternalPrefixes {
		if _, err := ParseCIDR(prefix); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("internalPrefixes").Index(i), prefix, "invalid CIDR"))
		}
	}
	for i, rule := range spec.EgressRules {
		rulePath := fldPath.Child("egressRules").Index(i)
		allErrs = append(allErrs, validateNetworkRef(rule.NetworkID, rule.Interface, rulePath, resolveNetworks)...)
		var v4, v6 int
		for j, ip := range rule.IPs {
			addr, err := netip.ParseAddr(ip)
			if err != nil || addr.Zone() != "" || addr.Is4In6() {
				allErrs = append(allErrs, field.Invalid(rulePath.Child("ips").Index(j), ip, "invalid IP address"))
				continue
			}
			if addr.Is4() {
				v4++
			} else {
				v6++
			}
		}
		if v4 > 1 || v6 > 1 {
			allErrs = append(allErrs, field.Invalid(rulePath.Child("ips"), rule.IPs, "at most one IPv4 and one IPv6 address are supported in this build"))
		}
	}
	for i, limit := range spec.RateLimits {
		limitPath := fldPath.Child("rateLimits").Index(i)
		allErrs = append(allErrs, validateNetworkRef(limit.NetworkID, limit.Interface, limitPath, resolveNetworks)...)
		if limit.Rate == 0 {
			allErrs = append(allErrs, field.Invalid(limitPath.Child("rate"), limit.Rate, "must be at least 1 MiB/s"))
		}
	}
	return allErrs
}

func validateNetworkRef(networkID, iface string, fldPath *field.Path, resolveNetworks bool) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case networkID == "" && iface == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("interface"), "networkID or interface is required"))
	case networkID != "" && iface != "":
		allErrs = append(allErrs, field.Invalid(fldPath.Child("networkID"), networkID, "set networkID or interface, not both"))
	case networkID != "" && !resolveNetworks:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("networkID"), networkID, "network IDs cannot be mapped to interfaces by this source; name the interface"))
	}
	if iface != "" && !IsInterfaceName(iface) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("interface"), iface, "invalid interface name"))
	}
	return allErrs
}

// IsInterfaceName tells whether s can be a Linux interface name: 1-15
// printable characters without blanks, slashes and quotes.
func IsInterfaceName(s string) bool {
	return s != "" && len(s) <= 15 && validIfaceName(s)
}

func validIfaceName(s string) bool {
	for _, c := range s {
		if c <= ' ' || c == '/' || c == '"' || c > '~' {
			return false
		}
	}
	return true
}
