package validation

import (
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// ValidateFirewallTrafficSpec checks internal prefixes, SNAT rules and rate
// limits. resolveNetworks tells whether the caller can map a metal network ID to
// an interface; without that, rules must name the interface. Each network or
// interface has at most one SNAT rule and one rate limit: a second would be
// dead (SNAT) or unclear (two limits), and both would share a rule's name in
// the ruleset.
func ValidateFirewallTrafficSpec(spec *fwv1alpha1.FirewallTrafficSpec, fldPath *field.Path, resolveNetworks bool) field.ErrorList {
	var allErrs field.ErrorList
	if p := fldPath.Child("internalPrefixes"); len(spec.InternalPrefixes) > MaxInternalPrefixes {
		allErrs = append(allErrs, field.TooMany(p, len(spec.InternalPrefixes), MaxInternalPrefixes))
	} else {
		for i, prefix := range spec.InternalPrefixes {
			if _, err := cidr.Parse(prefix); err != nil {
				allErrs = append(allErrs, fielderrors.Invalid(p.Index(i), prefix, "invalid CIDR"))
			}
		}
	}
	if p := fldPath.Child("egressRules"); len(spec.EgressRules) > MaxEgressRules {
		allErrs = append(allErrs, field.TooMany(p, len(spec.EgressRules), MaxEgressRules))
	} else {
		seen := sets.New[string]()
		for i, rule := range spec.EgressRules {
			rulePath := p.Index(i)
			allErrs = append(allErrs, validateNetworkRef(rule.NetworkID, rule.Interface, rulePath, resolveNetworks, seen)...)
			allErrs = append(allErrs, validateSNATIPs(rule.IPs, rulePath.Child("ips"))...)
		}
	}
	if p := fldPath.Child("rateLimits"); len(spec.RateLimits) > MaxRateLimits {
		allErrs = append(allErrs, field.TooMany(p, len(spec.RateLimits), MaxRateLimits))
	} else {
		seen := sets.New[string]()
		for i, limit := range spec.RateLimits {
			limitPath := p.Index(i)
			allErrs = append(allErrs, validateNetworkRef(limit.NetworkID, limit.Interface, limitPath, resolveNetworks, seen)...)
			allErrs = append(allErrs, ValidateRate(limit.Rate, limitPath.Child("rate"))...)
		}
	}
	return allErrs
}

// ValidateRate checks a rate limit in MiB/s: at least 1, at most what the
// kernel accepts (MaxRateMiBps).
func ValidateRate(rate uint32, fldPath *field.Path) field.ErrorList {
	switch {
	case rate == 0:
		return field.ErrorList{field.Invalid(fldPath, rate, "must be at least 1 MiB/s")}
	case rate > MaxRateMiBps:
		return field.ErrorList{field.Invalid(fldPath, rate, fmt.Sprintf("must be at most %d MiB/s, the highest limit the kernel accepts", MaxRateMiBps))}
	}
	return nil
}

func validateSNATIPs(ips []string, fldPath *field.Path) field.ErrorList {
	if len(ips) > MaxSNATIPs {
		return field.ErrorList{field.TooMany(fldPath, len(ips), MaxSNATIPs)}
	}
	var allErrs field.ErrorList
	var v4, v6 int
	for j, ip := range ips {
		addr, err := netip.ParseAddr(ip)
		if err != nil || addr.Zone() != "" || addr.Is4In6() {
			allErrs = append(allErrs, fielderrors.Invalid(fldPath.Index(j), ip, "invalid IP address"))
			continue
		}
		if addr.Is4() {
			v4++
		} else {
			v6++
		}
	}
	if v4 > 1 || v6 > 1 {
		allErrs = append(allErrs, field.Invalid(fldPath, ips, "at most one IPv4 and one IPv6 address are supported in this build"))
	}
	return allErrs
}

// validateNetworkRef checks the network or interface a rule names and that no
// earlier rule of the same list (seen) names it too.
func validateNetworkRef(networkID, iface string, fldPath *field.Path, resolveNetworks bool, seen sets.Set[string]) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case networkID == "" && iface == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("interface"), "networkID or interface is required"))
	case networkID != "" && iface != "":
		allErrs = append(allErrs, fielderrors.Invalid(fldPath.Child("networkID"), networkID, "set networkID or interface, not both"))
	case networkID != "" && !resolveNetworks:
		allErrs = append(allErrs, fielderrors.Invalid(fldPath.Child("networkID"), networkID, "network IDs cannot be mapped to interfaces by this source; name the interface"))
	case networkID != "":
		if errs := ValidateMetalID(networkID, fldPath.Child("networkID")); len(errs) > 0 {
			allErrs = append(allErrs, errs...)
		} else if seen.Has("network " + networkID) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Child("networkID"), networkID))
		}
		seen.Insert("network " + networkID)
	}
	if iface != "" {
		if !IsInterfaceName(iface) {
			allErrs = append(allErrs, fielderrors.Invalid(fldPath.Child("interface"), iface, "invalid interface name"))
		} else if networkID == "" && seen.Has("interface "+iface) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Child("interface"), iface))
		}
		seen.Insert("interface " + iface)
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
