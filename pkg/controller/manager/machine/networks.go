package machine

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
)

// maxAgentConfigBytes bounds the agent config read from the userdata (the
// agent's own bound).
const maxAgentConfigBytes = 32 << 20

// WithMachine returns the userdata with the agent config's networks
// (network ID -> interface) set to what the provider knows of the machine,
// so that SNAT rules and rate limits may name networks on a real machine,
// and with routing, when the machine announces routes through FRR (the
// agent then announces its Firewall's distance). Entries of the config for
// networks the provider does not know stay. The files are not changed in
// place; without an agent config they are returned as they are.
func WithMachine(files []File, networks []agentconfigv1alpha1.Network, routing *agentconfigv1alpha1.Routing) ([]File, error) {
	out := slices.Clone(files)
	for i, f := range out {
		if f.Path != agentconfigv1alpha1.ConfigPath || (len(networks) == 0 && routing == nil) {
			continue
		}
		cfg := &agentconfigv1alpha1.Config{}
		if errs := strict.Decode(f.Content, cfg, field.NewPath("config"), strict.Options{MaxBytes: maxAgentConfigBytes, Required: "the agent config is empty"}); len(errs) > 0 {
			return nil, fmt.Errorf("the agent config in the userdata: %w", errs.ToAggregate())
		}
		merged := slices.Clone(networks)
		for _, n := range cfg.Networks {
			if !slices.ContainsFunc(networks, func(m agentconfigv1alpha1.Network) bool { return m.ID == n.ID }) {
				merged = append(merged, n)
			}
		}
		slices.SortFunc(merged, func(a, b agentconfigv1alpha1.Network) int { return strings.Compare(a.ID, b.ID) })
		cfg.Networks = merged
		if routing != nil {
			cfg.Routing = routing
		}
		data, err := agentconfigv1alpha1.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		out[i].Content = data
	}
	return out, nil
}
