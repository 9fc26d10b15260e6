package agent

import (
	"fmt"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// Desired merges what the enabled controllers contribute into the ruleset to
// apply. fromSeed is the Firewall's traffic spec as last read from the seed
// (for controllers.firewall.source: seed). A controller that is off
// contributes nothing: without the firewall controller there are no internal
// prefixes, so only established traffic passes.
func Desired(cfg *config.Config, fromSeed *fwv1alpha1.FirewallTrafficSpec) (*ruleset.Ruleset, error) {
	var (
		fw       *fwv1alpha1.FirewallTrafficSpec
		policies []*fwv1alpha1.PolicySpec
	)
	if c := cfg.Controllers.Firewall; c != nil {
		switch c.Source {
		case config.SourceStatic:
			fw = cfg.Sources.Static.Firewall
		case config.SourceSeed:
			fw = fromSeed
		default:
			return nil, fmt.Errorf("controllers.firewall.source %q: not implemented yet in this build", c.Source)
		}
	}
	if c := cfg.Controllers.CWNP; c != nil {
		if c.Source != config.SourceStatic {
			return nil, fmt.Errorf("controllers.cwnp.source %q: not implemented yet in this build", c.Source)
		}
		policies = append(policies, cfg.Sources.Static.CWNP)
	}
	return ruleset.Build(fw, policies)
}

// Render loads the config at path and returns the ruleset it describes in nft
// syntax, changing nothing.
func Render(path string) (string, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return "", err
	}
	// A seed-sourced firewall spec is not fetched here: render changes
	// nothing and talks to nobody, so that part stays empty.
	rs, err := Desired(cfg, nil)
	if err != nil {
		return "", err
	}
	return ruleset.Render(rs), nil
}
