package config

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
)

// implemented are the sources each controller of this build can read.
var implemented = map[string][]string{
	"firewall": {SourceStatic, SourceSeed},
	"cwnp":     {SourceStatic, SourceShoot},
	"service":  {SourceShoot},
	"monitor":  {SourceShoot},
}

// Validate returns every problem in the config, each with its field path. A
// controller that selects a source this build does not implement yet is an
// error too: the agent must not start and silently enforce nothing.
func Validate(cfg *Config) field.ErrorList {
	var allErrs field.ErrorList
	srcPath := field.NewPath("sources")
	if s := cfg.Sources.Seed; s != nil {
		p := srcPath.Child("seed")
		if s.Namespace == "" {
			allErrs = append(allErrs, field.Required(p.Child("namespace"), ""))
		}
		if s.Kubeconfig == "" && s.BootstrapKubeconfig == "" {
			allErrs = append(allErrs, field.Required(p.Child("kubeconfig"), "kubeconfig or bootstrapKubeconfig is required"))
		}
	}
	if s := cfg.Sources.Shoot; s != nil {
		p := srcPath.Child("shoot")
		if s.Namespace == "" {
			allErrs = append(allErrs, field.Required(p.Child("namespace"), ""))
		}
		if s.AccessSecret != "" && cfg.Sources.Seed == nil {
			allErrs = append(allErrs, field.Invalid(p.Child("accessSecret"), s.AccessSecret, "is read through the seed: sources.seed is required"))
		}
		if s.AccessSecret != "" && s.Kubeconfig == "" {
			allErrs = append(allErrs, field.Required(p.Child("kubeconfig"), "the path the kubeconfig from accessSecret is kept at"))
		} else if s.Kubeconfig == "" && cfg.readsShoot() {
			allErrs = append(allErrs, field.Required(p.Child("kubeconfig"), "a controller reads the shoot"))
		}
	}
	if s := cfg.Sources.Static; s != nil {
		p := srcPath.Child("static")
		if s.Firewall != nil {
			allErrs = append(allErrs, validation.ValidateFirewallTrafficSpec(s.Firewall, p.Child("firewall"), true)...)
			allErrs = append(allErrs, cfg.validateNetworkIDs(s.Firewall, p.Child("firewall"))...)
		}
		if s.CWNP != nil {
			allErrs = append(allErrs, validation.ValidatePolicySpec(s.CWNP, p.Child("cwnp"))...)
		}
	}

	seen := map[string]bool{}
	for i, n := range cfg.Networks {
		p := field.NewPath("networks").Index(i)
		switch {
		case n.ID == "":
			allErrs = append(allErrs, field.Required(p.Child("id"), ""))
		case seen[n.ID]:
			allErrs = append(allErrs, field.Duplicate(p.Child("id"), n.ID))
		}
		seen[n.ID] = true
		if !validation.IsInterfaceName(n.Interface) {
			allErrs = append(allErrs, field.Invalid(p.Child("interface"), n.Interface, "invalid interface name"))
		}
	}

	ctrlPath := field.NewPath("controllers")
	for _, c := range []struct {
		name    string
		ctrl    *Controller
		allowed []string
	}{
		{"firewall", cfg.Controllers.Firewall, []string{SourceStatic, SourceSeed}},
		{"cwnp", cfg.Controllers.CWNP, []string{SourceStatic, SourceShoot}},
		{"service", cfg.Controllers.Service, []string{SourceShoot}},
		{"monitor", cfg.Controllers.Monitor, []string{SourceShoot}},
	} {
		if c.ctrl == nil {
			continue
		}
		p := ctrlPath.Child(c.name, "source")
		switch {
		case !contains(c.allowed, c.ctrl.Source):
			allErrs = append(allErrs, field.NotSupported(p, c.ctrl.Source, c.allowed))
		case !cfg.hasSource(c.ctrl.Source):
			allErrs = append(allErrs, field.Invalid(p, c.ctrl.Source, "selected source is not configured under sources."+c.ctrl.Source))
		case !contains(implemented[c.name], c.ctrl.Source):
			allErrs = append(allErrs, field.Invalid(p, c.ctrl.Source, fmt.Sprintf("the %s controller is not implemented for this source in this build (implemented: %v)", c.name, implemented[c.name])))
		}
	}
	return allErrs
}

// validateNetworkIDs checks that every network a rule names is in networks.
func (cfg *Config) validateNetworkIDs(spec *fwv1alpha1.FirewallTrafficSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	check := func(p *field.Path, id string) {
		if _, ok := cfg.InterfaceOf(id); id != "" && !ok {
			allErrs = append(allErrs, field.Invalid(p.Child("networkID"), id, "no interface for this network: add it to networks"))
		}
	}
	for i, r := range spec.EgressRules {
		check(fldPath.Child("egressRules").Index(i), r.NetworkID)
	}
	for i, r := range spec.RateLimits {
		check(fldPath.Child("rateLimits").Index(i), r.NetworkID)
	}
	return allErrs
}

// readsShoot tells whether a controller reads the shoot.
func (cfg *Config) readsShoot() bool {
	for _, c := range []*Controller{cfg.Controllers.CWNP, cfg.Controllers.Service, cfg.Controllers.Monitor} {
		if c != nil && c.Source == SourceShoot {
			return true
		}
	}
	return false
}

func (cfg *Config) hasSource(name string) bool {
	switch name {
	case SourceStatic:
		return cfg.Sources.Static != nil
	case SourceSeed:
		return cfg.Sources.Seed != nil
	case SourceShoot:
		return cfg.Sources.Shoot != nil
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
