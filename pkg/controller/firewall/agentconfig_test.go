package firewall

import (
	"testing"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
)

// The extension writes the agent's config; the agent must accept it, or a
// new firewall would boot into an agent that refuses to start.
func TestAgentConfigIsAcceptedByTheAgent(t *testing.T) {
	raw, err := agentConfig("shoot--p--s")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(raw)
	if err != nil {
		t.Fatalf("the agent refuses the extension's config: %v\n%s", err, raw)
	}
	if cfg.Sources.Seed == nil || cfg.Sources.Seed.Namespace != "shoot--p--s" || cfg.Controllers.Firewall == nil || cfg.Controllers.Firewall.Source != config.SourceSeed {
		t.Fatalf("the firewall spec must come from the seed: %s", raw)
	}
	for name, c := range map[string]*config.Controller{"cwnp": cfg.Controllers.CWNP, "service": cfg.Controllers.Service, "monitor": cfg.Controllers.Monitor} {
		if c == nil || c.Source != config.SourceShoot {
			t.Fatalf("the %s controller must read the shoot: %s", name, raw)
		}
	}
}
