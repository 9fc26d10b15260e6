package shootsource

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Policies lists the ClusterwideNetworkPolicies of the source's namespace,
// ours and metal-stack.io/v1's (IsMetalStack), sorted by name so that the
// same policies always build the same ruleset. Where both groups hold a
// name, ours is enforced and theirs is told so in its status. A metal-stack
// policy that does not convert comes with an empty spec, which allows
// nothing, and is reported ignored with the reason.
func (s *Source) Policies(ctx context.Context) ([]fwv1alpha1.ClusterwideNetworkPolicy, error) {
	c, err := s.connect()
	if err != nil {
		return nil, err
	}
	list := &fwv1alpha1.ClusterwideNetworkPolicyList{}
	if err := c.List(ctx, list, client.InNamespace(s.Config.Namespace)); err != nil {
		return nil, fmt.Errorf("listing ClusterwideNetworkPolicies in the shoot's namespace %s: %w", s.Config.Namespace, err)
	}
	theirs, err := s.metalStackPolicies(ctx, c)
	if err != nil {
		return nil, err
	}
	ours := map[string]bool{}
	for i := range list.Items {
		ours[list.Items[i].Name] = true
	}
	s.metalStack = map[string]*unstructured.Unstructured{}
	s.metalStackErrs = map[string]error{}
	s.shadowed = map[string]bool{}
	items := list.Items
	for i := range theirs {
		u := &theirs[i]
		s.metalStack[u.GetName()] = u
		if ours[u.GetName()] {
			s.shadowed[u.GetName()] = true
			continue
		}
		p, err := FromMetalStack(u)
		if err != nil {
			s.metalStackErrs[u.GetName()] = err
			p.Spec = fwv1alpha1.PolicySpec{}
		}
		items = append(items, p)
	}
	slices.SortFunc(items, func(a, b fwv1alpha1.ClusterwideNetworkPolicy) int { return strings.Compare(a.Name, b.Name) })
	return items, nil
}

// ReportPolicy writes a policy's status when it differs from what is there,
// so that an unchanged policy costs no write: in our format to ours, in
// firewall-controller's to a metal-stack.io/v1 one.
func (s *Source) ReportPolicy(ctx context.Context, p *fwv1alpha1.ClusterwideNetworkPolicy, status fwv1alpha1.PolicyStatus) error {
	if IsMetalStack(p) {
		if err := s.metalStackErrs[p.Name]; err != nil {
			status = fwv1alpha1.PolicyStatus{State: fwv1alpha1.PolicyStateIgnored, Message: err.Error()}
		}
		return s.reportMetalStack(ctx, p.Name, MetalStackStatus(status))
	}
	if s.shadowed[p.Name] {
		shadowed := fwv1alpha1.PolicyStatus{State: fwv1alpha1.PolicyStateIgnored,
			Message: fmt.Sprintf("not enforced: the %s ClusterwideNetworkPolicy of the same name is enforced instead", fwv1alpha1.SchemeGroupVersion)}
		if err := s.reportMetalStack(ctx, p.Name, MetalStackStatus(shadowed)); err != nil {
			return err
		}
	}
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
