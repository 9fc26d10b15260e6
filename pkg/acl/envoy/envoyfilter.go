package envoy

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ShootEnvoyFilterPrefix starts the name of the per-shoot EnvoyFilter: acl-<shoot namespace>.
	ShootEnvoyFilterPrefix = "acl-"
	// HTTPConnectEnvoyFilterName is the one shared EnvoyFilter per ingress gateway namespace.
	HTTPConnectEnvoyFilterName = "acl-http-connect"
)

// ShootEnvoyFilterName is the name of the shoot's own EnvoyFilter in an ingress namespace.
func ShootEnvoyFilterName(shootNamespace string) string {
	return ShootEnvoyFilterPrefix + shootNamespace
}

// NetworkFilterPatches insert the shoot's network RBAC filter first into each of its TLS filter
// chains, one per kube-apiserver host (SNI). The webhook uses the same patches.
func NetworkFilterPatches(hosts []string, s ShootPolicy) ([]*istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch, error) {
	if !s.Restricts() || len(hosts) == 0 {
		return nil, nil
	}
	filter, err := NetworkFilter(s)
	if err != nil {
		return nil, err
	}
	value, err := ToStruct(filter)
	if err != nil {
		return nil, err
	}
	var patches []*istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch
	for _, host := range hosts {
		patches = append(patches, &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch{
			ApplyTo: istioapinetworkingv1alpha3.EnvoyFilter_NETWORK_FILTER,
			Match: &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectMatch{
				Context: istioapinetworkingv1alpha3.EnvoyFilter_GATEWAY,
				ObjectTypes: &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectMatch_Listener{Listener: &istioapinetworkingv1alpha3.EnvoyFilter_ListenerMatch{
					Name:        TLSListenerName,
					FilterChain: &istioapinetworkingv1alpha3.EnvoyFilter_ListenerMatch_FilterChainMatch{Sni: host},
				}},
			},
			Patch: &istioapinetworkingv1alpha3.EnvoyFilter_Patch{
				Operation: istioapinetworkingv1alpha3.EnvoyFilter_Patch_INSERT_FIRST,
				Value:     value,
			},
		})
	}
	return patches, nil
}

// ShootEnvoyFilter is the shoot's own EnvoyFilter in one ingress gateway namespace, or nil
// when there is nothing to enforce.
func ShootEnvoyFilter(namespace string, selector map[string]string, hosts []string, s ShootPolicy) (*istionetworkingv1alpha3.EnvoyFilter, error) {
	patches, err := NetworkFilterPatches(hosts, s)
	if err != nil || len(patches) == 0 {
		return nil, err
	}
	ef := &istionetworkingv1alpha3.EnvoyFilter{
		TypeMeta:   metav1.TypeMeta{APIVersion: istionetworkingv1alpha3.SchemeGroupVersion.String(), Kind: "EnvoyFilter"},
		ObjectMeta: metav1.ObjectMeta{Name: ShootEnvoyFilterName(s.Namespace), Namespace: namespace},
	}
	ef.Spec.WorkloadSelector = &istioapinetworkingv1alpha3.WorkloadSelector{Labels: selector}
	ef.Spec.ConfigPatches = patches
	return ef, nil
}

// HTTPConnectEnvoyFilter is the one EnvoyFilter per ingress gateway namespace that puts the
// shared HTTP RBAC filter before the router of the HTTP-CONNECT listeners and serves its config
// through ECDS. Only the EXTENSION_CONFIG part changes with the shoots' ACLs.
func HTTPConnectEnvoyFilter(namespace string, selector map[string]string, shoots []ShootPolicy) (*istionetworkingv1alpha3.EnvoyFilter, error) {
	filter, err := HTTPConnectFilter()
	if err != nil {
		return nil, err
	}
	filterValue, err := ToStruct(filter)
	if err != nil {
		return nil, err
	}
	ext, err := HTTPConnectExtensionConfig(shoots)
	if err != nil {
		return nil, err
	}
	extValue, err := ToStruct(ext)
	if err != nil {
		return nil, fmt.Errorf("rendering the extension config: %w", err)
	}
	ef := &istionetworkingv1alpha3.EnvoyFilter{
		TypeMeta:   metav1.TypeMeta{APIVersion: istionetworkingv1alpha3.SchemeGroupVersion.String(), Kind: "EnvoyFilter"},
		ObjectMeta: metav1.ObjectMeta{Name: HTTPConnectEnvoyFilterName, Namespace: namespace},
	}
	ef.Spec.WorkloadSelector = &istioapinetworkingv1alpha3.WorkloadSelector{Labels: selector}
	for _, port := range []uint32{HTTPConnectPort, LegacyVPNPort} {
		ef.Spec.ConfigPatches = append(ef.Spec.ConfigPatches, &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch{
			ApplyTo: istioapinetworkingv1alpha3.EnvoyFilter_HTTP_FILTER,
			Match: &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectMatch{
				Context: istioapinetworkingv1alpha3.EnvoyFilter_GATEWAY,
				ObjectTypes: &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectMatch_Listener{Listener: &istioapinetworkingv1alpha3.EnvoyFilter_ListenerMatch{
					PortNumber: port,
					FilterChain: &istioapinetworkingv1alpha3.EnvoyFilter_ListenerMatch_FilterChainMatch{
						Filter: &istioapinetworkingv1alpha3.EnvoyFilter_ListenerMatch_FilterMatch{
							Name:      hcmFilterName,
							SubFilter: &istioapinetworkingv1alpha3.EnvoyFilter_ListenerMatch_SubFilterMatch{Name: routerFilterName},
						},
					},
				}},
			},
			Patch: &istioapinetworkingv1alpha3.EnvoyFilter_Patch{Operation: istioapinetworkingv1alpha3.EnvoyFilter_Patch_INSERT_BEFORE, Value: filterValue},
		})
	}
	ef.Spec.ConfigPatches = append(ef.Spec.ConfigPatches, &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch{
		ApplyTo: istioapinetworkingv1alpha3.EnvoyFilter_EXTENSION_CONFIG,
		Patch:   &istioapinetworkingv1alpha3.EnvoyFilter_Patch{Operation: istioapinetworkingv1alpha3.EnvoyFilter_Patch_ADD, Value: extValue},
	})
	return ef, nil
}

// IsInjected tells whether a config patch is one of this extension's network RBAC patches.
func IsInjected(p *istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch) bool {
	if p == nil || p.ApplyTo != istioapinetworkingv1alpha3.EnvoyFilter_NETWORK_FILTER || p.Patch == nil || p.Patch.Value == nil {
		return false
	}
	return p.Patch.Value.GetFields()["name"].GetStringValue() == NetworkFilterName
}

// StripInjected returns the patches without this extension's network RBAC patches.
func StripInjected(patches []*istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch) []*istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch {
	out := make([]*istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch, 0, len(patches))
	for _, p := range patches {
		if !IsInjected(p) {
			out = append(out, p)
		}
	}
	return out
}

// ContainsAll tells whether every wanted patch is among patches (compared as protos).
func ContainsAll(patches, wanted []*istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch) bool {
	for _, w := range wanted {
		found := false
		for _, p := range patches {
			if proto.Equal(p, w) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// SameInjection tells whether exactly the wanted patches are injected.
func SameInjection(patches, wanted []*istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch) bool {
	injected := 0
	for _, p := range patches {
		if IsInjected(p) {
			injected++
		}
	}
	return injected == len(wanted) && ContainsAll(patches, wanted)
}
