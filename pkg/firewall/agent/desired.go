package agent

import (
	"fmt"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metalsource"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// Inputs are what the agent last read from the APIs.
type Inputs struct {
	// Seed is the Firewall's traffic spec (controllers.firewall.source: seed).
	Seed *fwv1alpha1.FirewallTrafficSpec
	// ShootPolicies are the valid ClusterwideNetworkPolicies of the shoot
	// (controllers.cwnp.source: shoot), sorted by name.
	ShootPolicies []*fwv1alpha1.PolicySpec
	// Services are the shoot's LoadBalancer Services as allows
	// (controllers.service.source: shoot).
	Services []ruleset.ServiceAllow
	// Metal is the firewall's allocation in the metal-api
	// (controllers.firewall.source or controllers.cwnp.source: metal).
	Metal *metalsource.Allocation
}

// Desired merges what the enabled controllers contribute into the ruleset to
// apply. A controller that is off contributes nothing: without the firewall
// controller there are no internal prefixes, so only established traffic
// passes.
// With the config's dns section, it has the DNS redirect to the proxy and
// the policies' toFQDNs; without, toFQDNs allow nothing and are left out.
func Desired(cfg *agentconfigv1alpha1.Config, in Inputs) (*ruleset.Ruleset, error) {
	return desired(ruleset.Build, cfg, in, cfg.DNS)
}

// buildFunc is ruleset.Build or a ruleset.Builder's Build.
type buildFunc func(*fwv1alpha1.FirewallTrafficSpec, []*fwv1alpha1.PolicySpec, []ruleset.ServiceAllow) (*ruleset.Ruleset, error)

// dns is the DNS proxy's config: nil when no proxy runs.
func desired(build buildFunc, cfg *agentconfigv1alpha1.Config, in Inputs, dns *agentconfigv1alpha1.DNS) (*ruleset.Ruleset, error) {
	var (
		fw       *fwv1alpha1.FirewallTrafficSpec
		policies []*fwv1alpha1.PolicySpec
	)
	if c := cfg.Controllers.Firewall; c != nil {
		switch c.Source {
		case agentconfigv1alpha1.SourceStatic:
			fw = cfg.Sources.Static.Firewall
		case agentconfigv1alpha1.SourceSeed:
			fw = in.Seed
		case agentconfigv1alpha1.SourceMetal:
			if in.Metal != nil {
				fw = in.Metal.Firewall
			}
		default:
			return nil, fmt.Errorf("controllers.firewall.source %q: not implemented in this build", c.Source)
		}
	}
	networks := withMetalNetworks(cfg, in.Metal)
	fw, err := withInterfaces(fw, networks)
	if err != nil {
		return nil, err
	}
	if c := cfg.Controllers.CWNP; c != nil {
		switch c.Source {
		case agentconfigv1alpha1.SourceStatic:
			policies = append(policies, cfg.Sources.Static.CWNP)
		case agentconfigv1alpha1.SourceShoot:
			policies = append(policies, in.ShootPolicies...)
		case agentconfigv1alpha1.SourceMetal:
			if in.Metal != nil {
				policies = append(policies, in.Metal.Policies...)
			}
		default:
			return nil, fmt.Errorf("controllers.cwnp.source %q: not implemented in this build", c.Source)
		}
	}
	var services []ruleset.ServiceAllow
	if c := cfg.Controllers.Service; c != nil && c.Source == agentconfigv1alpha1.SourceShoot {
		services = in.Services
	}
	rs, err := build(fw, fqdnPolicies(policies, dns), services)
	if err != nil {
		return nil, err
	}
	return withMetricsGuard(withDropLog(withDNS(rs, dns), cfg.DropLog), networks), nil
}

// withInterfaces returns the spec with every network ID replaced by the
// machine's interface into that network (config `networks`). A network the
// config does not map is an error: a rule without its interface would SNAT or
// limit traffic on every interface.
func withInterfaces(fw *fwv1alpha1.FirewallTrafficSpec, cfg *agentconfigv1alpha1.Config) (*fwv1alpha1.FirewallTrafficSpec, error) {
	if fw == nil {
		return nil, nil
	}
	out := fw.DeepCopy()
	resolve := func(what string, i int, id string, iface *string) error {
		if id == "" {
			return nil
		}
		// SNAT matches where packets leave (postrouting), rate limits where
		// they arrive (forward): on metal-stack two names of one network.
		interfaceOf := cfg.InterfaceOf
		if what == "egressRules" {
			interfaceOf = cfg.OutInterfaceOf
		}
		name, ok := interfaceOf(id)
		if !ok {
			return fmt.Errorf("%s[%d].networkID %q: no interface for this network in the config's networks", what, i, id)
		}
		*iface = name
		return nil
	}
	for i := range out.EgressRules {
		r := &out.EgressRules[i]
		if err := resolve("egressRules", i, r.NetworkID, &r.Interface); err != nil {
			return nil, err
		}
		r.NetworkID = ""
	}
	for i := range out.RateLimits {
		r := &out.RateLimits[i]
		if err := resolve("rateLimits", i, r.NetworkID, &r.Interface); err != nil {
			return nil, err
		}
		r.NetworkID = ""
	}
	return out, nil
}

// Render loads the config at path and returns the ruleset it describes in nft
// syntax, changing nothing.
func Render(path string) (string, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return "", err
	}
	// What the seed and the shoot hold is not fetched here: render changes
	// nothing and talks to nobody, so those parts stay empty.
	rs, err := Desired(cfg, Inputs{})
	if err != nil {
		return "", err
	}
	return ruleset.Render(rs), nil
}

// withMetalNetworks adds the networks the metal-api names for this machine
// to the config's own (which win), so that a Firewall from the seed may name
// networks on a machine whose config maps none.
func withMetalNetworks(cfg *agentconfigv1alpha1.Config, alloc *metalsource.Allocation) *agentconfigv1alpha1.Config {
	if alloc == nil || len(alloc.Networks) == 0 {
		return cfg
	}
	out := *cfg
	out.Networks = append([]agentconfigv1alpha1.Network{}, cfg.Networks...)
	for _, n := range alloc.Networks {
		if _, ok := cfg.InterfaceOf(n.ID); !ok {
			out.Networks = append(out.Networks, n)
		}
	}
	return &out
}
