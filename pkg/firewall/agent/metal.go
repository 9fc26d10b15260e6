package agent

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metalsource"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
)

// metalAllocation is the metal-api in one round: the firewall's allocation,
// which gives the firewall controller's and the cwnp controller's parts.
// Nothing is reported back: the metal-api takes no status from the agent.
type metalAllocation struct {
	// err is why the allocation could not be read.
	err error
}

// read reads the allocation into the agent's inputs and tells whether what
// it gives changed. An unreachable metal-api, or an answer that is no valid
// allocation of this firewall, keeps the inputs (and the ruleset) as they are.
func (m *metalAllocation) read(ctx context.Context, a *Agent) bool {
	if a.metal == nil {
		return false
	}
	alloc, err := a.metal.Read(ctx)
	a.Metrics.ObserveSource(metrics.SourceMetal, err)
	if err != nil {
		m.err = err
		a.Log.Error("reading the allocation from the metal-api; the ruleset in force stays", "error", err)
		return false
	}
	if alloc == nil {
		return false
	}
	for _, reason := range alloc.Ignored {
		a.Log.Error("a rule of the metal-api is not enforced", "machine", alloc.MachineID, "rule", reason)
	}
	if old := a.in.Metal; old != nil && equality.Semantic.DeepEqual(old.Firewall, alloc.Firewall) &&
		equality.Semantic.DeepEqual(old.Policies, alloc.Policies) && equality.Semantic.DeepEqual(old.Networks, alloc.Networks) {
		a.in.Metal = alloc
		return false
	}
	a.in.Metal = alloc
	return true
}

// usesMetal tells whether a controller reads the metal-api.
func usesMetal(cfg *agentconfigv1alpha1.Config) bool {
	for _, c := range []*agentconfigv1alpha1.Controller{cfg.Controllers.Firewall, cfg.Controllers.CWNP} {
		if c != nil && c.Source == agentconfigv1alpha1.SourceMetal {
			return true
		}
	}
	return false
}

// newMetalSource is the metal source of cfg, named name.
func newMetalSource(cfg *agentconfigv1alpha1.Config, name string, a *Agent) *metalsource.Source {
	return &metalsource.Source{Config: *cfg.Sources.Metal, Name: name, Log: a.Log.With("source", "metal"), Transport: a.MetalTransport}
}
