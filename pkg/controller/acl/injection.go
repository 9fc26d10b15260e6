package acl

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// injectOrFilter has the webhook inject the shoot's policy into Gardener's EnvoyFilter of each
// ingress namespace, and returns the shoot's own EnvoyFilters for the namespaces where the
// injection did not take (no Gardener filter there, or the webhook down).
func (a *actuator) injectOrFilter(ctx context.Context, log logr.Logger, shootNamespace string, ingresses []ingress, shoot envoy.ShootPolicy, status *v1alpha1.ExtensionStatus) ([]*istionetworkingv1alpha3.EnvoyFilter, error) {
	// The webhook injects patches for all of the shoot's hosts (a patch for a host another gateway
	// serves matches nothing); the shoot's own EnvoyFilter names only the namespace's hosts.
	injectedPatches, err := envoy.NetworkFilterPatches(status.Hosts, shoot)
	if err != nil {
		return nil, err
	}
	var filters []*istionetworkingv1alpha3.EnvoyFilter
	for _, in := range ingresses {
		injected, err := a.triggerInjection(ctx, log, in.namespace, shootNamespace, hash(status), injectedPatches)
		if err != nil {
			return nil, err
		}
		if injected {
			log.Info("Policy lives in Gardener's EnvoyFilter, the shoot's own one is not needed", "namespace", in.namespace)
			continue
		}
		ef, err := envoy.ShootEnvoyFilter(in.namespace, in.selector, in.hosts, shoot)
		if err != nil {
			return nil, err
		}
		if ef != nil {
			filters = append(filters, ef)
		}
	}
	return filters, nil
}

// triggerInjection touches Gardener's per-shoot EnvoyFilter so that the webhook injects the
// current policy, and tells whether the stored object now carries it.
func (a *actuator) triggerInjection(ctx context.Context, log logr.Logger, ingressNamespace, shootNamespace, policyHash string, wanted []*istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch) (bool, error) {
	ef := &istionetworkingv1alpha3.EnvoyFilter{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: ingressNamespace, Name: shootNamespace + constants.GardenerTLSTerminationSuffix}, ef); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	if len(wanted) == 0 {
		return false, a.stripInjection(ctx, log, ingressNamespace, shootNamespace)
	}
	// Only a missing or stale injection needs the webhook. The annotation alone is not compared:
	// gardener-resource-manager may drop it when it re-applies its object, which must not cause a
	// write every time.
	if !envoy.SameInjection(ef.Spec.ConfigPatches, wanted) {
		patch := client.MergeFrom(ef.DeepCopy())
		if ef.Annotations == nil {
			ef.Annotations = map[string]string{}
		}
		ef.Annotations[constants.ACLPolicyHashAnnotation] = policyHash
		if err := a.client.Patch(ctx, ef, patch); err != nil {
			return false, fmt.Errorf("touching Gardener's EnvoyFilter %s/%s: %w", ef.Namespace, ef.Name, err)
		}
	}
	// The patch response is the object as stored, after the webhook (if it is up) mutated it.
	return envoy.SameInjection(ef.Spec.ConfigPatches, wanted), nil
}

// stripInjection removes what the webhook injected into Gardener's EnvoyFilter. The controller
// does it itself so that no stale policy remains when the webhook is down.
func (a *actuator) stripInjection(ctx context.Context, log logr.Logger, ingressNamespace, shootNamespace string) error {
	ef := &istionetworkingv1alpha3.EnvoyFilter{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: ingressNamespace, Name: shootNamespace + constants.GardenerTLSTerminationSuffix}, ef); err != nil {
		return client.IgnoreNotFound(err)
	}
	stripped := envoy.StripInjected(ef.Spec.ConfigPatches)
	if len(stripped) == len(ef.Spec.ConfigPatches) && ef.Annotations[constants.ACLPolicyHashAnnotation] == "" {
		return nil
	}
	log.Info("Removing the policy from Gardener's EnvoyFilter", "namespace", ingressNamespace, "name", ef.Name)
	ef.Spec.ConfigPatches = stripped
	delete(ef.Annotations, constants.ACLPolicyHashAnnotation)
	return a.client.Update(ctx, ef)
}
