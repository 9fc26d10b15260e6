// Package validation validates the firewall agent's configuration.
package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// implemented are the sources each controller of this build can read.
var implemented = map[string][]string{
	"firewall": {agentconfigv1alpha1.SourceStatic, agentconfigv1alpha1.SourceSeed, agentconfigv1alpha1.SourceMetal},
	"cwnp":     {agentconfigv1alpha1.SourceStatic, agentconfigv1alpha1.SourceShoot, agentconfigv1alpha1.SourceMetal},
	"service":  {agentconfigv1alpha1.SourceShoot},
	"monitor":  {agentconfigv1alpha1.SourceShoot},
}

// Validate returns the problems in the config, each with its field path, at
// most strict.MaxErrors of them and a count of the rest. dir is the agent's
// folder, the folder of the config file: the files the agent writes must lie
// in it. A config that enables no controller that contributes rules, or a
// controller without what it reads, is an error, and so is a controller that
// selects a source this build does not implement: the agent must not start,
// or replace the ruleset in force, with one that silently enforces nothing.
func Validate(cfg *agentconfigv1alpha1.Config, dir string) field.ErrorList {
	var allErrs field.ErrorList
	if cfg.Name != "" {
		allErrs = append(allErrs, ValidateName(cfg.Name, false)...)
	}
	allErrs = append(allErrs, validateSources(cfg, dir)...)
	allErrs = append(allErrs, validateNetworks(cfg.Networks)...)
	allErrs = append(allErrs, validateControllers(cfg)...)
	allErrs = append(allErrs, validation.ValidateDNSProxy(cfg.DNS, field.NewPath("dns"))...)
	allErrs = append(allErrs, validateDropLog(cfg)...)
	allErrs = append(allErrs, validateMetrics(cfg)...)
	allErrs = append(allErrs, validateRouting(cfg)...)
	return fielderrors.Bound(allErrs, field.NewPath("config"))
}

func validateSources(cfg *agentconfigv1alpha1.Config, dir string) field.ErrorList {
	var allErrs field.ErrorList
	srcPath := field.NewPath("sources")
	written := writtenFiles{dir: dir, seen: map[string]*field.Path{}}
	if s := cfg.Sources.Seed; s != nil {
		p := srcPath.Child("seed")
		allErrs = append(allErrs, validateNamespace(s.Namespace, p.Child("namespace"))...)
		switch {
		case s.Kubeconfig == "" && s.BootstrapKubeconfig == "":
			allErrs = append(allErrs, field.Required(p.Child("kubeconfig"), "kubeconfig or bootstrapKubeconfig is required"))
		case s.Kubeconfig == "":
			allErrs = append(allErrs, field.Required(p.Child("kubeconfig"), "the path the agent keeps the seed kubeconfig it bootstraps at"))
		}
		// The agent writes the seed kubeconfig (bootstrap, renewal) and
		// replaces the bootstrap kubeconfig with one delivered through the shoot.
		allErrs = append(allErrs, written.check(s.Kubeconfig, p.Child("kubeconfig"))...)
		allErrs = append(allErrs, written.check(s.BootstrapKubeconfig, p.Child("bootstrapKubeconfig"))...)
		// The agent writes its identity key on first use, by default beside
		// the seed kubeconfig.
		if key := agentconfigv1alpha1.IdentityKeyOf(s); key != "" {
			allErrs = append(allErrs, written.check(key, p.Child("identityKey"))...)
		}
	}
	if s := cfg.Sources.Shoot; s != nil {
		p := srcPath.Child("shoot")
		allErrs = append(allErrs, validateNamespace(s.Namespace, p.Child("namespace"))...)
		if s.AccessSecret != "" {
			allErrs = append(allErrs, validateObjectName(s.AccessSecret, p.Child("accessSecret"))...)
			if cfg.Sources.Seed == nil {
				allErrs = append(allErrs, fielderrors.Invalid(p.Child("accessSecret"), s.AccessSecret, "is read through the seed: sources.seed is required"))
			}
		}
		switch {
		case s.AccessSecret != "" && s.Kubeconfig == "":
			allErrs = append(allErrs, field.Required(p.Child("kubeconfig"), "the path the kubeconfig from accessSecret is kept at"))
		case s.Kubeconfig == "" && readsShoot(cfg):
			allErrs = append(allErrs, field.Required(p.Child("kubeconfig"), "a controller reads the shoot"))
		case s.AccessSecret != "":
			// The agent writes it from the access secret.
			allErrs = append(allErrs, written.check(s.Kubeconfig, p.Child("kubeconfig"))...)
		default:
			allErrs = append(allErrs, validateReadPath(s.Kubeconfig, p.Child("kubeconfig"))...)
		}
	}
	if s := cfg.Sources.Metal; s != nil {
		allErrs = append(allErrs, validateMetalSource(s, srcPath.Child("metal"))...)
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
		if s.Agent != nil {
			allErrs = append(allErrs, validateAgentRelease(s.Agent, p.Child("agent"))...)
		}
	}
	return allErrs
}

func validateNetworks(networks []agentconfigv1alpha1.Network) field.ErrorList {
	p := field.NewPath("networks")
	if len(networks) > validation.MaxNetworks {
		return field.ErrorList{field.TooMany(p, len(networks), validation.MaxNetworks)}
	}
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, n := range networks {
		p := p.Index(i)
		if errs := validation.ValidateMetalID(n.ID, p.Child("id")); len(errs) > 0 {
			allErrs = append(allErrs, errs...)
		} else if seen.Has(n.ID) {
			allErrs = append(allErrs, field.Duplicate(p.Child("id"), n.ID))
		}
		seen.Insert(n.ID)
		if !validation.IsInterfaceName(n.Interface) {
			allErrs = append(allErrs, fielderrors.Invalid(p.Child("interface"), n.Interface, "invalid interface name"))
		}
		if n.OutInterface != "" && !validation.IsInterfaceName(n.OutInterface) {
			allErrs = append(allErrs, fielderrors.Invalid(p.Child("outInterface"), n.OutInterface, "invalid interface name"))
		}
	}
	return allErrs
}

func validateControllers(cfg *agentconfigv1alpha1.Config) field.ErrorList {
	var allErrs field.ErrorList
	ctrlPath := field.NewPath("controllers")
	c := cfg.Controllers
	if c.Firewall == nil && c.CWNP == nil && c.Service == nil {
		allErrs = append(allErrs, field.Required(ctrlPath,
			"enable the firewall, cwnp or service controller: without them the agent would enforce a ruleset that lets no new connection through"))
	}
	if c.CWNP != nil && c.Firewall == nil {
		allErrs = append(allErrs, field.Required(ctrlPath.Child("firewall"),
			"the policies of controllers.cwnp allow traffic from and to the internal prefixes, which the firewall controller provides"))
	}
	for _, ctrl := range []struct {
		name    string
		ctrl    *agentconfigv1alpha1.Controller
		allowed []string
	}{
		{"firewall", c.Firewall, []string{agentconfigv1alpha1.SourceStatic, agentconfigv1alpha1.SourceSeed, agentconfigv1alpha1.SourceMetal}},
		{"cwnp", c.CWNP, []string{agentconfigv1alpha1.SourceStatic, agentconfigv1alpha1.SourceShoot, agentconfigv1alpha1.SourceMetal}},
		{"service", c.Service, []string{agentconfigv1alpha1.SourceShoot}},
		{"monitor", c.Monitor, []string{agentconfigv1alpha1.SourceShoot}},
	} {
		if ctrl.ctrl == nil {
			continue
		}
		allErrs = append(allErrs, validateSelfUpdate(ctrl.name, ctrl.ctrl.SelfUpdate, ctrlPath.Child(ctrl.name, "selfUpdate"))...)
		p := ctrlPath.Child(ctrl.name, "source")
		switch {
		case !contains(ctrl.allowed, ctrl.ctrl.Source):
			allErrs = append(allErrs, fielderrors.NotSupported(p, ctrl.ctrl.Source, ctrl.allowed))
		case !hasSource(cfg, ctrl.ctrl.Source):
			allErrs = append(allErrs, field.Invalid(p, ctrl.ctrl.Source, "selected source is not configured under sources."+ctrl.ctrl.Source))
		case !contains(implemented[ctrl.name], ctrl.ctrl.Source):
			allErrs = append(allErrs, field.Invalid(p, ctrl.ctrl.Source, fmt.Sprintf("the %s controller is not implemented for this source in this build (implemented: %v)", ctrl.name, implemented[ctrl.name])))
		case ctrl.ctrl.Source == agentconfigv1alpha1.SourceStatic:
			allErrs = append(allErrs, staticSectionRequired(cfg.Sources.Static, ctrl.name)...)
		}
	}
	return allErrs
}

// staticSectionRequired reports a controller reading the static source whose
// section there is missing: it would contribute nothing.
func staticSectionRequired(s *agentconfigv1alpha1.StaticSource, controller string) field.ErrorList {
	p := field.NewPath("sources", "static", controller)
	if (controller == "firewall" && s.Firewall == nil) || (controller == "cwnp" && s.CWNP == nil) {
		return field.ErrorList{field.Required(p, fmt.Sprintf("controllers.%s reads it", controller))}
	}
	return nil
}

// validateNetworkIDs checks that every network a rule names is in networks,
// and that no two rules of a list end on one interface.
func validateNetworkIDs(cfg *agentconfigv1alpha1.Config, spec *fwv1alpha1.FirewallTrafficSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	// seen maps each interface with a rule to whether that rule named it by
	// network; two rules naming one interface directly are the API
	// validation's to report, every other pair is reported here, in any order.
	check := func(list string, i int, id, iface string, seen map[string]bool) {
		p := fldPath.Child(list).Index(i)
		byNetwork := id != ""
		if byNetwork {
			// SNAT matches where packets leave, rate limits where they arrive.
			interfaceOf := cfg.InterfaceOf
			if list == "egressRules" {
				interfaceOf = cfg.OutInterfaceOf
			}
			resolved, ok := interfaceOf(id)
			if !ok {
				allErrs = append(allErrs, fielderrors.Invalid(p.Child("networkID"), id, "no interface for this network: add it to networks"))
				return
			}
			iface = resolved
		}
		if earlierByNetwork, ok := seen[iface]; ok && (byNetwork || earlierByNetwork) {
			fld, value := p.Child("interface"), iface
			if byNetwork {
				fld, value = p.Child("networkID"), id
			}
			allErrs = append(allErrs, fielderrors.Invalid(fld, value, fmt.Sprintf("its interface %q has a rule already", iface)))
		}
		seen[iface] = seen[iface] || byNetwork
	}
	if len(spec.EgressRules) <= validation.MaxEgressRules {
		seen := map[string]bool{}
		for i, r := range spec.EgressRules {
			check("egressRules", i, r.NetworkID, r.Interface, seen)
		}
	}
	if len(spec.RateLimits) <= validation.MaxRateLimits {
		seen := map[string]bool{}
		for i, r := range spec.RateLimits {
			check("rateLimits", i, r.NetworkID, r.Interface, seen)
		}
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
	case agentconfigv1alpha1.SourceMetal:
		return cfg.Sources.Metal != nil
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
