package agent

import (
	"context"
	"log/slog"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/shootsource"
)

// checkedPolicies validates each shoot policy on its own: an invalid policy
// is left out and says why in its status, and never blocks the others. It
// returns the specs to enforce and, per policy, the status to report once
// they are applied.
func checkedPolicies(items []fwv1alpha1.ClusterwideNetworkPolicy) ([]*fwv1alpha1.PolicySpec, []fwv1alpha1.PolicyStatus) {
	var (
		specs    []*fwv1alpha1.PolicySpec
		statuses = make([]fwv1alpha1.PolicyStatus, len(items))
	)
	for i := range items {
		p := &items[i]
		statuses[i].ObservedGeneration = p.Generation
		if errs := validation.ValidatePolicySpec(&p.Spec, field.NewPath("spec")); len(errs) > 0 {
			statuses[i].State = fwv1alpha1.PolicyStateIgnored
			statuses[i].Message = errs.ToAggregate().Error()
			continue
		}
		statuses[i].State = fwv1alpha1.PolicyStateDeployed
		specs = append(specs, p.Spec.DeepCopy())
	}
	return specs, statuses
}

// shootPolicies is the shoot's ClusterwideNetworkPolicies in one round: read
// and checked one by one, and told their state once they are in force.
type shootPolicies struct {
	shoot    *shootsource.Source
	items    []fwv1alpha1.ClusterwideNetworkPolicy
	statuses []fwv1alpha1.PolicyStatus
	// err is why the policies could not be read.
	err error
}

// read reads the policies into the agent's inputs, leaving out the invalid
// ones, and tells whether the valid ones changed.
func (p *shootPolicies) read(ctx context.Context, a *Agent) bool {
	p.shoot = a.shoot
	p.items, p.err = a.shoot.Policies(ctx)
	if p.err != nil {
		a.Log.Error("reading the policies from the shoot; the ruleset in force stays", "error", p.err)
		return false
	}
	var specs []*fwv1alpha1.PolicySpec
	specs, p.statuses = checkedPolicies(p.items)
	if !a.policiesRead || !equality.Semantic.DeepEqual(specs, a.in.ShootPolicies) {
		a.in.ShootPolicies, a.policiesRead = specs, true
		return true
	}
	return false
}

// report writes each policy's state, deployed or ignored and why, if they
// were read; fqdns tells a deployed policy's FQDN selectors.
func (p *shootPolicies) report(ctx context.Context, log *slog.Logger, fqdns func(*fwv1alpha1.PolicySpec) []fwv1alpha1.FQDNSelectorStatus) {
	if p.err != nil {
		return
	}
	for i := range p.items {
		if p.statuses[i].State == fwv1alpha1.PolicyStateDeployed {
			p.statuses[i].FQDNs = fqdns(&p.items[i].Spec)
		}
		if err := p.shoot.ReportPolicy(ctx, &p.items[i], p.statuses[i]); err != nil {
			log.Error("reporting a policy's state", "policy", p.items[i].Name, "error", err)
		}
	}
}
