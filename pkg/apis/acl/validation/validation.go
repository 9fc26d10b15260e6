// Package validation decodes and validates the providerConfig of the extension
// type `acl`. The same code runs in the controller and, through it, in any
// admission check, so a shoot owner gets the same message everywhere.
package validation

import (
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
)

// DefaultMaxCIDRs is the largest number of CIDRs in one rule unless the operator sets another limit.
const DefaultMaxCIDRs = 500

// MaxCIDRLength is the longest CIDR string: an IPv6 prefix takes at most 43
// characters, and blanks around it are allowed.
const MaxCIDRLength = 64

// Limits are set by the operator.
type Limits struct {
	// MaxCIDRs is the largest number of CIDRs in one rule; 0 means DefaultMaxCIDRs.
	MaxCIDRs int
}

func (l Limits) maxCIDRs() int {
	if l.MaxCIDRs <= 0 {
		return DefaultMaxCIDRs
	}
	return l.MaxCIDRs
}

// Policy is a validated and normalised rule.
type Policy struct {
	// Action is v1alpha1.ActionAllow or v1alpha1.ActionDeny.
	Action string
	// Type is v1alpha1.TypeRemoteIP or v1alpha1.TypeDirectRemoteIP (source_ip is mapped to the latter).
	Type string
	// CIDRs are the rule's prefixes with host bits cleared, sorted, without duplicates.
	CIDRs []netip.Prefix
}

// ProviderConfigPath is the field path that errors are reported under.
var ProviderConfigPath = field.NewPath("providerConfig")

// Parse decodes raw (JSON or YAML) strictly, validates it and returns the normalised policy.
// Errors name the field path and the offending value.
func Parse(raw []byte, limits Limits) (*Policy, field.ErrorList) {
	return ParseAt(raw, limits, ProviderConfigPath)
}

// ParseAt is Parse with errors reported under fldPath, e.g. spec.extensions[2].providerConfig.
// At most strict.MaxErrors errors are returned, and a count of the rest; each
// quotes at most an excerpt of a value.
func ParseAt(raw []byte, limits Limits, fldPath *field.Path) (*Policy, field.ErrorList) {
	cfg, errs := Decode(raw, fldPath)
	if len(errs) > 0 {
		return nil, errs
	}
	if errs := ValidateExtensionConfig(cfg, fldPath, limits); len(errs) > 0 {
		return nil, fielderrors.Bound(errs, fldPath)
	}
	return Normalise(cfg), nil
}

// MaxProviderConfigBytes bounds the providerConfig: 500 IPv6 CIDRs take
// about 25 KiB, so this leaves room for an operator's higher CIDR limit.
const MaxProviderConfigBytes = 512 << 10

// Decode decodes raw strictly (see pkg/utils/strict): one JSON or YAML
// document, no unknown, duplicate or wrongly cased fields.
func Decode(raw []byte, fldPath *field.Path) (*v1alpha1.ExtensionConfig, field.ErrorList) {
	cfg := &v1alpha1.ExtensionConfig{}
	if errs := strict.Decode(raw, cfg, fldPath, strict.Options{
		MaxBytes: MaxProviderConfigBytes,
		Required: "an acl extension needs a providerConfig with a rule",
	}); len(errs) > 0 {
		return nil, errs
	}
	return cfg, nil
}

// ValidateExtensionConfig validates a decoded providerConfig.
func ValidateExtensionConfig(cfg *v1alpha1.ExtensionConfig, fldPath *field.Path, limits Limits) field.ErrorList {
	var errs field.ErrorList
	if cfg.APIVersion != "" && cfg.APIVersion != v1alpha1.SchemeGroupVersion {
		errs = append(errs, fielderrors.NotSupported(fldPath.Child("apiVersion"), cfg.APIVersion, []string{v1alpha1.SchemeGroupVersion}))
	}
	if cfg.Kind != "" && cfg.Kind != "ExtensionConfig" {
		errs = append(errs, fielderrors.NotSupported(fldPath.Child("kind"), cfg.Kind, []string{"ExtensionConfig"}))
	}
	rulePath := fldPath.Child("rule")
	if cfg.Rule == nil {
		return append(errs, field.Required(rulePath, "a rule with action, type and cidrs is required"))
	}
	r := cfg.Rule
	if !slices.Contains([]string{v1alpha1.ActionAllow, v1alpha1.ActionDeny}, strings.ToUpper(r.Action)) {
		errs = append(errs, fielderrors.NotSupported(rulePath.Child("action"), r.Action, []string{v1alpha1.ActionAllow, v1alpha1.ActionDeny}))
	}
	if !slices.Contains([]string{v1alpha1.TypeRemoteIP, v1alpha1.TypeDirectRemoteIP, v1alpha1.TypeSourceIP}, strings.ToLower(r.Type)) {
		errs = append(errs, fielderrors.NotSupported(rulePath.Child("type"), r.Type, []string{v1alpha1.TypeRemoteIP, v1alpha1.TypeDirectRemoteIP, v1alpha1.TypeSourceIP}))
	}
	cidrsPath := rulePath.Child("cidrs")
	switch {
	case len(r.Cidrs) == 0:
		errs = append(errs, field.Required(cidrsPath, "at least one CIDR is required"))
	case len(r.Cidrs) > limits.maxCIDRs():
		errs = append(errs, field.TooMany(cidrsPath, len(r.Cidrs), limits.maxCIDRs()))
	}
	for i, c := range r.Cidrs {
		if len(c) > MaxCIDRLength {
			// The parser's error would quote all of it.
			errs = append(errs, fielderrors.TooLong(cidrsPath.Index(i), c, MaxCIDRLength))
		} else if _, err := cidr.Parse(strings.TrimSpace(c)); err != nil {
			errs = append(errs, field.Invalid(cidrsPath.Index(i), c, err.Error()))
		}
	}
	return errs
}

// Normalise turns a valid config into a Policy. It must only be called after validation.
func Normalise(cfg *v1alpha1.ExtensionConfig) *Policy {
	p := &Policy{Action: strings.ToUpper(cfg.Rule.Action), Type: strings.ToLower(cfg.Rule.Type)}
	if p.Type == v1alpha1.TypeSourceIP {
		p.Type = v1alpha1.TypeDirectRemoteIP
	}
	for _, c := range cfg.Rule.Cidrs {
		if prefix, err := cidr.Parse(strings.TrimSpace(c)); err == nil {
			p.CIDRs = append(p.CIDRs, prefix)
		}
	}
	p.CIDRs = cidr.Sort(p.CIDRs)
	return p
}
