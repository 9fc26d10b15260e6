// Package providerstatus is the codec of the acl Extension's
// status.providerStatus: what the controller reports as enforced and what the
// EnvoyFilter webhook and the health check read back. Keeping it out of the
// controller lets the webhook depend on APIs, constants and Envoy config only.
package providerstatus

import (
	"encoding/json"
	"fmt"
	"net/netip"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// Decode returns the Extension's acl status, nil when it has none.
func Decode(ex *extensionsv1alpha1.Extension) (*v1alpha1.ExtensionStatus, error) {
	if ex.Status.ProviderStatus == nil || len(ex.Status.ProviderStatus.Raw) == 0 {
		return nil, nil
	}
	st := &v1alpha1.ExtensionStatus{}
	if err := json.Unmarshal(ex.Status.ProviderStatus.Raw, st); err != nil {
		return nil, fmt.Errorf("status.providerStatus: %w", err)
	}
	return st, nil
}

// Encode returns the status as the providerStatus to write.
func Encode(st *v1alpha1.ExtensionStatus) (*runtime.RawExtension, error) {
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

// Policy returns the enforced policy and hosts of an acl Extension, or
// ok=false when its status reports none (not yet reconciled, invalid, or not
// an acl Extension).
func Policy(ex *extensionsv1alpha1.Extension) (envoy.ShootPolicy, []string, bool) {
	if ex.Spec.Type != constants.ACLExtensionType {
		return envoy.ShootPolicy{}, nil, false
	}
	st, err := Decode(ex)
	if err != nil || st == nil || st.Action == "" {
		return envoy.ShootPolicy{}, nil, false
	}
	return ShootPolicy(ex.Namespace, st), st.Hosts, true
}

// ShootPolicy is what a status says is enforced for the shoot in namespace.
func ShootPolicy(namespace string, st *v1alpha1.ExtensionStatus) envoy.ShootPolicy {
	s := envoy.ShootPolicy{Namespace: namespace, Action: st.Action, Type: st.Type}
	for _, c := range st.AllowedCIDRs {
		if p, err := netip.ParsePrefix(c); err == nil {
			s.Allowed = append(s.Allowed, p)
		}
	}
	for _, c := range st.DeniedCIDRs {
		if p, err := netip.ParsePrefix(c); err == nil {
			s.Denied = append(s.Denied, p)
		}
	}
	return s
}

// IngressNamespaces are the ingress namespaces an acl Extension's status says
// its policy is deployed to.
func IngressNamespaces(ex *extensionsv1alpha1.Extension) []string {
	st, err := Decode(ex)
	if err != nil || st == nil {
		return nil
	}
	return st.IngressNamespaces
}

// InjectionCurrent tells whether Gardener's per-shoot EnvoyFilter carries
// exactly the policy of the acl Extension's status; the health check uses it
// to report drift.
func InjectionCurrent(ef *istionetworkingv1alpha3.EnvoyFilter, ex *extensionsv1alpha1.Extension) (bool, error) {
	policy, hosts, ok := Policy(ex)
	if !ok {
		return true, nil
	}
	wanted, err := envoy.NetworkFilterPatches(hosts, policy)
	if err != nil {
		return false, err
	}
	return envoy.SameInjection(ef.Spec.ConfigPatches, wanted), nil
}
