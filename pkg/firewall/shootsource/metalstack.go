package shootsource

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// MetalStackPolicyGroupVersion is the group of metal-stack's firewall-
// controller, whose ClusterwideNetworkPolicies shoots moved from it hold.
// They are read as unstructured objects: their Go types would pull the
// controller's dependencies into the agent.
var MetalStackPolicyGroupVersion = schema.GroupVersion{Group: constants.MetalStackPolicyGroup, Version: "v1"}

// metalStackPolicyKind is the kind in both groups.
const metalStackPolicyKind = "ClusterwideNetworkPolicy"

// The states firewall-controller writes (its PolicyDeploymentState).
const (
	metalStackDeployed = "deployed"
	metalStackIgnored  = "ignored"
)

// IsMetalStack tells whether a policy from Policies was read from the
// metal-stack.io group.
func IsMetalStack(p *fwv1alpha1.ClusterwideNetworkPolicy) bool {
	return p.APIVersion == MetalStackPolicyGroupVersion.String()
}

// metalStackPolicies lists the metal-stack.io/v1 policies of the namespace.
// A shoot without that CRD has none.
func (s *Source) metalStackPolicies(ctx context.Context, c client.Client) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(MetalStackPolicyGroupVersion.WithKind(metalStackPolicyKind + "List"))
	err := c.List(ctx, list, client.InNamespace(s.Config.Namespace))
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s ClusterwideNetworkPolicies in the shoot's namespace %s: %w", MetalStackPolicyGroupVersion, s.Config.Namespace, err)
	}
	return list.Items, nil
}

// FromMetalStack converts a metal-stack.io/v1 policy into ours. The two specs
// have the same fields under the same names and meanings (their Go types omit
// a port 0; one written as 0 is refused by our validation, as by theirs);
// their status is not carried over. A field ours lacks is an error.
func FromMetalStack(u *unstructured.Unstructured) (fwv1alpha1.ClusterwideNetworkPolicy, error) {
	p := fwv1alpha1.ClusterwideNetworkPolicy{}
	p.APIVersion, p.Kind = MetalStackPolicyGroupVersion.String(), metalStackPolicyKind
	p.ObjectMeta = metav1ObjectMeta(u)
	spec, _, err := unstructured.NestedMap(u.Object, "spec")
	if err != nil {
		return p, fmt.Errorf("%s ClusterwideNetworkPolicy %s: spec: %w", MetalStackPolicyGroupVersion, u.GetName(), err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(spec, &p.Spec, true); err != nil {
		return p, fmt.Errorf("%s ClusterwideNetworkPolicy %s: spec: %w", MetalStackPolicyGroupVersion, u.GetName(), err)
	}
	return p, nil
}

func metav1ObjectMeta(u *unstructured.Unstructured) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
		Generation: u.GetGeneration(), ResourceVersion: u.GetResourceVersion()}
}

// MetalStackStatus is our status in firewall-controller's format: state
// deployed or ignored with the message, and fqdn_state keyed by each
// selector's matchName or matchPattern with the addresses allowed for it now.
func MetalStackStatus(status fwv1alpha1.PolicyStatus) map[string]any {
	out := map[string]any{}
	switch status.State {
	case fwv1alpha1.PolicyStateDeployed:
		out["state"] = metalStackDeployed
	case fwv1alpha1.PolicyStateIgnored:
		out["state"] = metalStackIgnored
	}
	messages := []string{}
	if status.Message != "" {
		messages = append(messages, status.Message)
	}
	fqdns := map[string]any{}
	for _, f := range status.FQDNs {
		name := f.MatchName
		if name == "" {
			name = f.MatchPattern
		}
		if f.Message != "" {
			messages = append(messages, name+": "+f.Message)
		}
		byVersion := map[string][]any{}
		for _, a := range f.Addresses {
			version := "ip"
			if addr, err := netip.ParseAddr(a); err == nil && addr.Is6() {
				version = "ip6"
			}
			byVersion[version] = append(byVersion[version], a)
		}
		sets := []any{}
		for _, version := range []string{"ip", "ip6"} {
			if ips := byVersion[version]; len(ips) > 0 {
				sets = append(sets, map[string]any{"fqdn": name, "ips": ips, "version": version})
			}
		}
		fqdns[name] = sets
	}
	if len(fqdns) > 0 {
		out["fqdn_state"] = fqdns
	}
	if len(messages) > 0 {
		out["message"] = strings.Join(messages, "; ")
	}
	return out
}

// reportMetalStack writes a metal-stack.io/v1 policy's status in its format,
// when it differs from what is there.
func (s *Source) reportMetalStack(ctx context.Context, name string, status map[string]any) error {
	u, ok := s.metalStack[name]
	if !ok {
		return nil
	}
	current, _, _ := unstructured.NestedMap(u.Object, "status")
	if sameJSON(current, status) {
		return nil
	}
	c, err := s.connect()
	if err != nil {
		return err
	}
	patch := client.MergeFrom(u.DeepCopy())
	u = u.DeepCopy()
	if err := unstructured.SetNestedField(u.Object, status, "status"); err != nil {
		return err
	}
	if err := c.Status().Patch(ctx, u, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("status of %s ClusterwideNetworkPolicy %s: %w", MetalStackPolicyGroupVersion, name, err)
	}
	s.metalStack[name] = u
	return nil
}

// sameJSON tells whether two statuses serialize alike (a status read back
// holds []any where a built one holds []string).
func sameJSON(a, b map[string]any) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && bytes.Equal(x, y)
}
