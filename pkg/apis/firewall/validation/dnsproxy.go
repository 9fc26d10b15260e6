package validation

import (
	"fmt"
	"net/netip"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// Bounds of a DNSProxy.
const (
	// MaxDNSUpstreams is the most resolvers (resolv.conf takes three).
	MaxDNSUpstreams = 8
	// MaxDNSDuration bounds minTTL and grace: a day, as resolvers cap TTLs.
	MaxDNSDuration = 24 * time.Hour
	// MaxDNSAddressesPerName bounds maxAddressesPerName (a DNS message over
	// TCP holds about 4,000 A records).
	MaxDNSAddressesPerName = 4096
	// MaxDNSNamesPerSelector bounds maxNamesPerSelector.
	MaxDNSNamesPerSelector = 1 << 20
	// MaxDNSSelectors bounds maxSelectors.
	MaxDNSSelectors = 100000
	// MaxDNSAddresses bounds maxAddresses.
	MaxDNSAddresses = 10_000_000
)

// ValidateDNSProxy checks the DNS proxy's settings at fldPath: the agent
// config's dns, a providerConfig's dns.
func ValidateDNSProxy(d *fwv1alpha1.DNSProxy, fldPath *field.Path) field.ErrorList {
	if d == nil {
		return nil
	}
	p := fldPath
	var allErrs field.ErrorList
	switch up := p.Child("upstreams"); {
	case len(d.Upstreams) == 0:
		allErrs = append(allErrs, field.Required(up, "the resolvers the nodes ask, whose queries the proxy answers"))
	case len(d.Upstreams) > MaxDNSUpstreams:
		allErrs = append(allErrs, field.TooMany(up, len(d.Upstreams), MaxDNSUpstreams))
	default:
		seen := map[netip.Addr]bool{}
		for i, u := range d.Upstreams {
			addr, err := netip.ParseAddr(u)
			switch {
			case err != nil || addr.Zone() != "":
				allErrs = append(allErrs, fielderrors.Invalid(up.Index(i), u, "must be an IPv4 or IPv6 address"))
			case !addr.Unmap().IsGlobalUnicast():
				allErrs = append(allErrs, fielderrors.Invalid(up.Index(i), u, "must be a unicast address the nodes reach through the firewall"))
			case seen[addr.Unmap()]:
				allErrs = append(allErrs, fielderrors.Duplicate(up.Index(i), u))
			}
			seen[addr.Unmap()] = true
		}
	}
	if d.Port < 0 || d.Port > 65535 {
		allErrs = append(allErrs, field.Invalid(p.Child("port"), d.Port, "must be between 1 and 65535 (0 or unset: the default)"))
	}
	allErrs = append(allErrs, validateDNSDuration(d.MinTTL, p.Child("minTTL"))...)
	allErrs = append(allErrs, validateDNSDuration(d.Grace, p.Child("grace"))...)
	for _, b := range []struct {
		name  string
		value int32
		max   int32
	}{
		{"maxAddressesPerName", d.MaxAddressesPerName, MaxDNSAddressesPerName},
		{"maxNamesPerSelector", d.MaxNamesPerSelector, MaxDNSNamesPerSelector},
		{"maxSelectors", d.MaxSelectors, MaxDNSSelectors},
		{"maxAddresses", d.MaxAddresses, MaxDNSAddresses},
	} {
		if b.value < 0 || b.value > b.max {
			allErrs = append(allErrs, field.Invalid(p.Child(b.name), b.value, fmt.Sprintf("must be between 1 and %d (0 or unset: the default)", b.max)))
		}
	}
	return allErrs
}

func validateDNSDuration(d *metav1.Duration, fldPath *field.Path) field.ErrorList {
	if d != nil && (d.Duration < 0 || d.Duration > MaxDNSDuration) {
		return field.ErrorList{field.Invalid(fldPath, d.Duration.String(), "must be between 0s and 24h")}
	}
	return nil
}
