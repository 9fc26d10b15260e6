// Package validation validates the firewall agent's configuration.
package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
)

// implemented are the sources each controller of this build can read.
var implemented = map[string][]string{
	"firewall": {agentconfigv1alpha1.SourceStatic, agentconfigv1alpha1.SourceSeed},
	"cwnp":     {agentconfigv1alpha1.SourceStatic, agentconfigv1alpha1.SourceShoot},
	"service":  {agentconfigv1alpha1.SourceShoot},
	"monitor":  {agentconfigv1alpha1.SourceShoot},
}

// Validate returns every problem in the config, each with its field path. A
// controller that selects a source this build does not implement yet is an
// error too: the agent must not start and silently enforce nothing.
func Validate(cfg *agentconfigv1alpha1.Config) field.ErrorList {
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
		} else if s.Kubeconfig == "" && readsShoot(cfg) {
			allErrs = append(allErrs, field.Required(p.Child("kubeconfig"), "a controller reads the shoot"))
		}
	}
	if s := cfg.Sources.Static; s != nil {
		p := srcPath.Child("static")
		if s.Firewall != nil {
			allErrs = append(allErrs, validation.ValidateFirewallTrafficSpec(s.Firewall, p.Child("firewall"), true)...)
			allErrs = append(allErrs, validateNetworkIDs(cfg, s.Firewall, p.Child("firewall"))...)
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
		ctrl    *agentconfigv1alpha1.Controller
		allowed []string
	}{
		{"firewall", cfg.Controllers.Firewall, []string{agentconfigv1alpha1.SourceStatic, agentconfigv1alpha1.SourceSeed}},
		{"cwnp", cfg.Controllers.CWNP, []string{agentconfigv1alpha1.SourceStatic, agentconfigv1alpha1.SourceShoot}},
		{"service", cfg.Controllers.Service, []string{agentconfigv1alpha1.SourceShoot}},
		{"monitor", cfg.Controllers.Monitor, []string{agentconfigv1alpha1.SourceShoot}},
	} {
		if c.ctrl == nil {
			continue
		}
		p := ctrlPath.Child(c.name, "source")
		switch {
		case !contains(c.allowed, c.ctrl.Source):
			allErrs = append(allErrs, field.NotSupported(p, c.ctrl.Source, c.allowed))
		case !hasSource(cfg, c.ctrl.Source):
			allErrs = append(allErrs, field.Invalid(p, c.ctrl.Source, "selected source is not configured under sources."+c.ctrl.Source))
		case !contains(implemented[c.name], c.ctrl.Source):
			allErrs = append(allErrs, field.Invalid(p, c.ctrl.Source, fmt.Sprintf("the %s controller is not implemented for this source in this build (implemented: %v)", c.name, implemented[c.name])))
		}
	}
	return allErrs
}

// validateNetworkIDs checks that every network a rule names is in networks.
func validateNetworkIDs(cfg *agentconfigv1alpha1.Config, spec *fwv1alpha1.FirewallTrafficSpec, fldPath *field.Path) field.ErrorList {
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
func readsShoot(cfg *agentconfigv1alpha1.Config) bool {
	for _, c := range []*agentconfigv1alpha1.Controller{cfg.Controllers.CWNP, cfg.Controllers.Service, cfg.Controllers.Monitor} {
		if c != nil && c.Source == agentconfigv1alpha1.SourceShoot {
			return true
		}
	}
	return false
}

func hasSource(cfg *agentconfigv1alpha1.Config, name string) bool {
	switch name {
	case agentconfigv1alpha1.SourceStatic:
		return cfg.Sources.Static != nil
	case agentconfigv1alpha1.SourceSeed:
		return cfg.Sources.Seed != nil
	case agentconfigv1alpha1.SourceShoot:
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
