package agent

import (
	"fmt"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// Desired merges what the enabled controllers contribute into the ruleset to
// apply. Only the static source exists in this build; config validation has
// already refused every other one. A controller that is off contributes
// nothing: without the firewall controller there are no internal prefixes, so
// only established traffic passes.
func Desired(cfg *config.Config) (*ruleset.Ruleset, error) {
	var (
		fw       *fwv1alpha1.FirewallTrafficSpec
		policies []*fwv1alpha1.PolicySpec
	)
	if c := cfg.Controllers.Firewall; c != nil {
		if c.Source != config.SourceStatic {
			return nil, fmt.Errorf("controllers.firewall.source %q: not implemented yet in this build", c.Source)
		}
		fw = cfg.Sources.Static.Firewall
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
	rs, err := Desired(cfg)
	if err != nil {
		return "", err
	}
	return ruleset.Render(rs), nil
}
