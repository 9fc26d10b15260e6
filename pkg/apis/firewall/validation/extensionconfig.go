package validation

import (
	"bytes"
	"encoding/json"

	"k8s.io/apimachinery/pkg/util/validation/field"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// DecodeFirewallExtensionConfig decodes a `firewall` extension's
// providerConfig strictly and validates it; errors are under `providerConfig`.
func DecodeFirewallExtensionConfig(raw []byte) (*firewallv1alpha1.FirewallExtensionConfig, error) {
	cfg, errs := DecodeFirewallExtensionConfigAt(raw, field.NewPath("providerConfig"))
	return cfg, errs.ToAggregate()
}

// DecodeFirewallExtensionConfigAt is DecodeFirewallExtensionConfig with the
// errors under fldPath, e.g. spec.extensions[2].providerConfig of a Shoot.
func DecodeFirewallExtensionConfigAt(raw []byte, fldPath *field.Path) (*firewallv1alpha1.FirewallExtensionConfig, field.ErrorList) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, field.ErrorList{field.Required(fldPath, "size, image, partition, project and networks are required")}
	}
	cfg := &firewallv1alpha1.FirewallExtensionConfig{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		return nil, field.ErrorList{field.Invalid(fldPath, string(raw), err.Error())}
	}
	if errs := ValidateFirewallExtensionConfig(cfg, fldPath); len(errs) > 0 {
		return nil, errs
	}
	return cfg, nil
}

// ValidateFirewallExtensionConfig checks the config as the Firewall spec it becomes.
func ValidateFirewallExtensionConfig(cfg *firewallv1alpha1.FirewallExtensionConfig, fldPath *field.Path) field.ErrorList {
	allErrs := ValidateFirewallSpec(firewallv1alpha1.FirewallSpec{
		Size: cfg.Size, Image: cfg.Image, Partition: cfg.Partition, Project: cfg.Project, Networks: cfg.Networks,
		FirewallTrafficSpec: cfg.FirewallTrafficSpec,
	}, fldPath)
	switch cfg.Strategy {
	case "", firewallv1alpha1.StrategyRollingUpdate, firewallv1alpha1.StrategyRecreate:
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("strategy"), cfg.Strategy,
			[]firewallv1alpha1.UpdateStrategy{firewallv1alpha1.StrategyRollingUpdate, firewallv1alpha1.StrategyRecreate}))
	}
	return allErrs
}
