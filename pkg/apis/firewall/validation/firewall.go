package validation

import (
	"net/url"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	apivalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// ValidateFirewall checks a Firewall. At most strict.MaxErrors errors are
// returned (and a count of the rest): they end up in a status condition.
func ValidateFirewall(fw *firewallv1alpha1.Firewall) field.ErrorList {
	specPath := field.NewPath("spec")
	allErrs := ValidateFirewallSpec(fw.Spec, specPath)
	allErrs = append(allErrs, ValidateDistance(fw.Spec.Distance, specPath.Child("distance"))...)
	return fielderrors.Bound(allErrs, specPath)
}

// ValidateFirewallSpec checks the machine, the traffic rules and the userdata.
// A SNAT rule or a rate limit may only name a network of networks.
func ValidateFirewallSpec(spec firewallv1alpha1.FirewallSpec, fldPath *field.Path) field.ErrorList {
	return validateFirewallSpec(spec, fldPath, true)
}

// validateFirewallSpec is ValidateFirewallSpec; without networksKnown (a
// providerConfig's, to which the node network is added later), no network is
// allowed and rules may name networks not in the list.
func validateFirewallSpec(spec firewallv1alpha1.FirewallSpec, fldPath *field.Path, networksKnown bool) field.ErrorList {
	var allErrs field.ErrorList
	for _, f := range []struct{ name, value string }{{"size", spec.Size}, {"image", spec.Image}, {"partition", spec.Partition}, {"project", spec.Project}} {
		allErrs = append(allErrs, ValidateMetalID(f.value, fldPath.Child(f.name))...)
	}
	networksPath := fldPath.Child("networks")
	seenNetworks := sets.New[string]()
	before := len(allErrs)
	switch {
	case len(spec.Networks) == 0 && networksKnown:
		allErrs = append(allErrs, field.Required(networksPath, "at least one network"))
	case len(spec.Networks) > MaxNetworks:
		allErrs = append(allErrs, field.TooMany(networksPath, len(spec.Networks), MaxNetworks))
	default:
		for i, n := range spec.Networks {
			if errs := ValidateMetalID(n, networksPath.Index(i)); len(errs) > 0 {
				allErrs = append(allErrs, errs...)
			} else if seenNetworks.Has(n) {
				allErrs = append(allErrs, field.Duplicate(networksPath.Index(i), n))
			}
			seenNetworks.Insert(n)
		}
	}
	// Against a wrong list of networks, membership would only add noise.
	networksValid := len(allErrs) == before
	allErrs = append(allErrs, ValidateFirewallTrafficSpec(&spec.FirewallTrafficSpec, fldPath, true)...)
	if networksValid && networksKnown {
		allErrs = append(allErrs, validateAttachedNetworks(&spec.FirewallTrafficSpec, seenNetworks, fldPath)...)
	}
	allErrs = append(allErrs, validateAgent(spec.AgentVersion, spec.AgentURL, spec.AgentSHA256, fldPath)...)
	allErrs = append(allErrs, validateAgentDownload(spec, fldPath)...)
	allErrs = append(allErrs, validateSSHPublicKeys(spec.SSHPublicKeys, fldPath.Child("sshPublicKeys"))...)
	allErrs = append(allErrs, validateUserdataContents(spec.UserdataContents, fldPath.Child("userdataContents"))...)
	if spec.InitialRules != nil {
		allErrs = append(allErrs, validateInitialRules(spec.InitialRules, fldPath.Child("initialRules"))...)
	}
	return allErrs
}

// validateAttachedNetworks checks that SNAT rules and rate limits name only
// networks the machine is attached to: any other matches no interface.
func validateAttachedNetworks(spec *firewallv1alpha1.FirewallTrafficSpec, networks sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	check := func(p *field.Path, id string) {
		if id != "" && isMetalID(id) && len(id) <= MaxMetalIDLength && !networks.Has(id) {
			allErrs = append(allErrs, field.Invalid(p.Child("networkID"), id, "not one of networks: the firewall is not attached to it"))
		}
	}
	if len(spec.EgressRules) <= MaxEgressRules {
		for i, r := range spec.EgressRules {
			check(fldPath.Child("egressRules").Index(i), r.NetworkID)
		}
	}
	if len(spec.RateLimits) <= MaxRateLimits {
		for i, r := range spec.RateLimits {
			check(fldPath.Child("rateLimits").Index(i), r.NetworkID)
		}
	}
	return allErrs
}

// validateAgent checks the agent's version and download URL: bounded, and the
// URL an absolute http(s) URL.
func validateAgent(version, agentURL, sha string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if sha != "" && !IsSHA256Hex(sha) {
		allErrs = append(allErrs, fielderrors.Invalid(fldPath.Child("agentSHA256"), sha, "must be 64 lowercase hex digits (a SHA-256)"))
	}
	if p := fldPath.Child("agentVersion"); len(version) > MaxAgentVersionLength {
		allErrs = append(allErrs, fielderrors.TooLong(p, version, MaxAgentVersionLength))
	} else if version != "" && (strings.ContainsAny(version, " \t") || !isPrintable(version)) {
		allErrs = append(allErrs, fielderrors.Invalid(p, version, "must not contain blanks or control characters"))
	}
	if agentURL == "" {
		return allErrs
	}
	p := fldPath.Child("agentURL")
	if len(agentURL) > MaxAgentURLLength {
		return append(allErrs, fielderrors.TooLong(p, agentURL, MaxAgentURLLength))
	}
	if u, err := url.Parse(agentURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || !isPrintable(agentURL) {
		allErrs = append(allErrs, fielderrors.Invalid(p, agentURL, "must be an absolute http or https URL"))
	}
	return allErrs
}

// validateAgentDownload checks agentSHA512: a SHA-512, and only beside the
// version, URL and SHA-256 that the machine needs to download the binary and
// check the operator's signature over it.
func validateAgentDownload(spec firewallv1alpha1.FirewallSpec, fldPath *field.Path) field.ErrorList {
	if spec.AgentSHA512 == "" {
		return nil
	}
	p := fldPath.Child("agentSHA512")
	if !isLowerHex(spec.AgentSHA512, 128) {
		return field.ErrorList{fielderrors.Invalid(p, spec.AgentSHA512, "must be 128 lowercase hex digits (a SHA-512)")}
	}
	if spec.AgentVersion == "" || spec.AgentURL == "" || spec.AgentSHA256 == "" {
		return field.ErrorList{field.Required(fldPath.Child("agentVersion"), "agentSHA512 downloads the agent onto new machines: agentVersion, agentURL and agentSHA256 are needed too")}
	}
	return nil
}

// IsSHA256Hex tells whether s is a SHA-256 in lowercase hex.
func IsSHA256Hex(s string) bool {
	return isLowerHex(s, 64)
}

// isLowerHex tells whether s is n lowercase hex digits.
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validateSSHPublicKeys bounds the keys and keeps each on one line: a newline
// would add another line to authorized_keys.
func validateSSHPublicKeys(keys []string, fldPath *field.Path) field.ErrorList {
	if len(keys) > MaxSSHPublicKeys {
		return field.ErrorList{field.TooMany(fldPath, len(keys), MaxSSHPublicKeys)}
	}
	var allErrs field.ErrorList
	for i, k := range keys {
		switch {
		case len(k) > MaxSSHPublicKeyLength:
			allErrs = append(allErrs, fielderrors.TooLong(fldPath.Index(i), k, MaxSSHPublicKeyLength))
		case strings.TrimSpace(k) == "":
			allErrs = append(allErrs, field.Required(fldPath.Index(i), ""))
		case !isPrintable(k):
			allErrs = append(allErrs, fielderrors.Invalid(fldPath.Index(i), k, "must be one line without control characters"))
		}
	}
	return allErrs
}

func validateUserdataContents(contents []firewallv1alpha1.UserdataContent, fldPath *field.Path) field.ErrorList {
	if len(contents) > MaxUserdataContents {
		return field.ErrorList{field.TooMany(fldPath, len(contents), MaxUserdataContents)}
	}
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, c := range contents {
		idxPath := fldPath.Index(i)
		switch {
		case c.Path == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("path"), ""))
		case len(c.Path) > MaxUserdataPathLength:
			allErrs = append(allErrs, fielderrors.TooLong(idxPath.Child("path"), c.Path, MaxUserdataPathLength))
		case !path.IsAbs(c.Path) || path.Clean(c.Path) != c.Path || !isPrintable(c.Path):
			allErrs = append(allErrs, fielderrors.Invalid(idxPath.Child("path"), c.Path, "must be an absolute, clean path"))
		case seen.Has(c.Path):
			allErrs = append(allErrs, fielderrors.Duplicate(idxPath.Child("path"), c.Path))
		}
		seen.Insert(c.Path)
		if len(c.Content) > MaxUserdataContentBytes {
			allErrs = append(allErrs, field.TooLong(idxPath.Child("content"), "", MaxUserdataContentBytes))
		}
		switch {
		case c.Content != "" && c.SecretRef != nil:
			allErrs = append(allErrs, fielderrors.Invalid(idxPath.Child("secretRef"), c.SecretRef.Name, "set either content or secretRef, not both"))
		case c.SecretRef != nil && (c.SecretRef.Name == "" || c.SecretRef.Key == ""):
			allErrs = append(allErrs, field.Required(idxPath.Child("secretRef"), "name and key are required"))
		case c.SecretRef != nil:
			for _, msg := range apivalidation.IsDNS1123Subdomain(c.SecretRef.Name) {
				allErrs = append(allErrs, fielderrors.Invalid(idxPath.Child("secretRef", "name"), c.SecretRef.Name, msg))
			}
			for _, msg := range apivalidation.IsConfigMapKey(c.SecretRef.Key) {
				allErrs = append(allErrs, fielderrors.Invalid(idxPath.Child("secretRef", "key"), c.SecretRef.Key, msg))
			}
		}
		if c.Mode != nil && (*c.Mode < 0 || *c.Mode > 0o777) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("mode"), *c.Mode, "must be between 0 and 0777 (511)"))
		}
	}
	return allErrs
}
