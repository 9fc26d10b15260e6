package shootsource

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Policies lists the ClusterwideNetworkPolicies of the source's namespace,
// sorted by name so that the same policies always build the same ruleset.
func (s *Source) Policies(ctx context.Context) ([]fwv1alpha1.ClusterwideNetworkPolicy, error) {
	c, err := s.connect()
	if err != nil {
		return nil, err
	}
	list := &fwv1alpha1.ClusterwideNetworkPolicyList{}
	if err := c.List(ctx, list, client.InNamespace(s.Config.Namespace)); err != nil {
		return nil, fmt.Errorf("listing ClusterwideNetworkPolicies in the shoot's namespace %s: %w", s.Config.Namespace, err)
	}
	slices.SortFunc(list.Items, func(a, b fwv1alpha1.ClusterwideNetworkPolicy) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// ReportPolicy writes a policy's status when it differs from what is there,
// so that an unchanged policy costs no write.
func (s *Source) ReportPolicy(ctx context.Context, p *fwv1alpha1.ClusterwideNetworkPolicy, status fwv1alpha1.PolicyStatus) error {
	if equality.Semantic.DeepEqual(p.Status, status) {
		return nil
	}
	c, err := s.connect()
	if err != nil {
		return err
	}
	patch := client.MergeFrom(p.DeepCopy())
	p.Status = status
	if err := c.Status().Patch(ctx, p, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("status of ClusterwideNetworkPolicy %s: %w", p.Name, err)
	}
	return nil
}
