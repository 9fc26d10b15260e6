package envoy

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"

	istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ShootEnvoyFilterPrefix starts the name of the per-shoot EnvoyFilter: acl-<shoot namespace>.
	ShootEnvoyFilterPrefix = "acl-"
	// HTTPConnectEnvoyFilterName is the one shared EnvoyFilter per ingress gateway namespace; the
	// shards' EnvoyFilters are named after it (ShardEnvoyFilterName).
	HTTPConnectEnvoyFilterName = "acl-http-connect"
)

// ShootEnvoyFilterName is the name of the shoot's own EnvoyFilter in an ingress namespace.
func ShootEnvoyFilterName(shootNamespace string) string {
	return ShootEnvoyFilterPrefix + shootNamespace
}

// NetworkFilterPatches put the shoot's network RBAC filter first into each of its TLS filter
// chains, exactly once. Istio builds one chain for all hosts of a Gateway server (Gardener puts a
// shoot's hosts into one), and applies a patch matching one of a chain's server names to the
// whole chain: one INSERT_FIRST per host would put the filter N times into that chain. So for
// each host the filter is first removed from the host's chain, then inserted: whatever Istio
// groups, each chain ends with the filter once, first. The webhook uses the same patches.
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
	match := func(host string, filter *istioapinetworkingv1alpha3.EnvoyFilter_ListenerMatch_FilterMatch) *istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectMatch {
		return &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectMatch{
			Context: istioapinetworkingv1alpha3.EnvoyFilter_GATEWAY,
			ObjectTypes: &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectMatch_Listener{Listener: &istioapinetworkingv1alpha3.EnvoyFilter_ListenerMatch{
				PortNumber:  TLSListenerPort,
				FilterChain: &istioapinetworkingv1alpha3.EnvoyFilter_ListenerMatch_FilterChainMatch{Sni: host, Filter: filter},
			}},
		}
	}
	var patches []*istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch
	for _, host := range hosts {
		patches = append(patches,
			&istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch{
				ApplyTo: istioapinetworkingv1alpha3.EnvoyFilter_NETWORK_FILTER,
				Match:   match(host, &istioapinetworkingv1alpha3.EnvoyFilter_ListenerMatch_FilterMatch{Name: NetworkFilterName}),
				Patch:   &istioapinetworkingv1alpha3.EnvoyFilter_Patch{Operation: istioapinetworkingv1alpha3.EnvoyFilter_Patch_REMOVE},
			},
			&istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch{
				ApplyTo: istioapinetworkingv1alpha3.EnvoyFilter_NETWORK_FILTER,
				Match:   match(host, nil),
				Patch:   &istioapinetworkingv1alpha3.EnvoyFilter_Patch{Operation: istioapinetworkingv1alpha3.EnvoyFilter_Patch_INSERT_FIRST, Value: value},
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

// HTTPConnectEnvoyFilter is the one EnvoyFilter per ingress gateway namespace that puts the ACL
// HTTP filter before the router of each of the gateway's HTTP-CONNECT listeners (GatewayListeners)
// and serves each filter's config through ECDS: the dispatch to the shards (DispatchConfig). It
// changes only when the set of shards does; the shards' RBAC configs live in EnvoyFilters of their
// own (ShardEnvoyFilter).
func HTTPConnectEnvoyFilter(namespace string, selector map[string]string, shards []Shard, listeners []HTTPConnectListener) (*istionetworkingv1alpha3.EnvoyFilter, error) {
	ef := newEnvoyFilter(namespace, HTTPConnectEnvoyFilterName, selector)
	for _, l := range listeners {
		filter, err := HTTPConnectFilter(l)
		if err != nil {
			return nil, err
		}
		filterValue, err := ToStruct(filter)
		if err != nil {
			return nil, err
		}
		ef.Spec.ConfigPatches = append(ef.Spec.ConfigPatches, &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch{
			ApplyTo: istioapinetworkingv1alpha3.EnvoyFilter_HTTP_FILTER,
			Match: &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectMatch{
				Context: istioapinetworkingv1alpha3.EnvoyFilter_GATEWAY,
				ObjectTypes: &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectMatch_Listener{Listener: &istioapinetworkingv1alpha3.EnvoyFilter_ListenerMatch{
					PortNumber: l.Port,
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
		dispatch, err := DispatchConfig(l, shards)
		if err != nil {
			return nil, err
		}
		if err := addExtensionConfig(ef, dispatch); err != nil {
			return nil, err
		}
	}
	return ef, nil
}

// ShardEnvoyFilterName is the name of a shard's EnvoyFilter in an ingress namespace.
func ShardEnvoyFilterName(sh Shard) string {
	return HTTPConnectEnvoyFilterName + "-" + sh.ID()
}

// ShardEnvoyFilter serves a shard's RBAC configs (one per HTTP-CONNECT listener) through ECDS.
func ShardEnvoyFilter(namespace string, selector map[string]string, sh Shard, listeners []HTTPConnectListener) (*istionetworkingv1alpha3.EnvoyFilter, error) {
	ef := newEnvoyFilter(namespace, ShardEnvoyFilterName(sh), selector)
	for _, l := range listeners {
		cfg, err := ShardConfig(l, sh)
		if err != nil {
			return nil, err
		}
		if err := addExtensionConfig(ef, cfg); err != nil {
			return nil, err
		}
	}
	return ef, nil
}

func newEnvoyFilter(namespace, name string, selector map[string]string) *istionetworkingv1alpha3.EnvoyFilter {
	ef := &istionetworkingv1alpha3.EnvoyFilter{
		TypeMeta:   metav1.TypeMeta{APIVersion: istionetworkingv1alpha3.SchemeGroupVersion.String(), Kind: "EnvoyFilter"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}
	ef.Spec.WorkloadSelector = &istioapinetworkingv1alpha3.WorkloadSelector{Labels: selector}
	return ef
}

func addExtensionConfig(ef *istionetworkingv1alpha3.EnvoyFilter, tec *corev3.TypedExtensionConfig) error {
	value, err := ToStruct(tec)
	if err != nil {
		return fmt.Errorf("rendering the extension config %s: %w", tec.GetName(), err)
	}
	ef.Spec.ConfigPatches = append(ef.Spec.ConfigPatches, &istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch{
		ApplyTo: istioapinetworkingv1alpha3.EnvoyFilter_EXTENSION_CONFIG,
		Patch:   &istioapinetworkingv1alpha3.EnvoyFilter_Patch{Operation: istioapinetworkingv1alpha3.EnvoyFilter_Patch_ADD, Value: value},
	})
	return nil
}

// IsInjected tells whether a config patch is one of this extension's network RBAC patches: an
// insertion of the filter or the removal that precedes it.
func IsInjected(p *istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch) bool {
	if p == nil || p.ApplyTo != istioapinetworkingv1alpha3.EnvoyFilter_NETWORK_FILTER || p.Patch == nil {
		return false
	}
	if p.Patch.Operation == istioapinetworkingv1alpha3.EnvoyFilter_Patch_REMOVE {
		return p.GetMatch().GetListener().GetFilterChain().GetFilter().GetName() == NetworkFilterName
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
