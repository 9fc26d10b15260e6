package agent

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
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
