package validation

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// DecodeFirewallExtensionConfig decodes a `firewall` extension's
// providerConfig strictly and validates it; errors are under `providerConfig`.
func DecodeFirewallExtensionConfig(raw []byte) (*firewallv1alpha1.FirewallExtensionConfig, error) {
	fldPath := field.NewPath("providerConfig")
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, field.ErrorList{field.Required(fldPath, "size, image, partition, project and networks are required")}.ToAggregate()
	}
	cfg := &firewallv1alpha1.FirewallExtensionConfig{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", fldPath, err)
	}
	if errs := ValidateFirewallExtensionConfig(cfg, fldPath); len(errs) > 0 {
		return nil, errs.ToAggregate()
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
