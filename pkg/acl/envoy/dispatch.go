package envoy

import (
	"fmt"
	"sort"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	matchingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/matching/v3"
	compositev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/composite/v3"
	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// HTTPConnectListener is one HTTP-CONNECT listener of the gateway: its port, the name of the ACL
// filter on it and the header its route sends the tunnel by (and the ACL decides on).
type HTTPConnectListener struct {
	Port       uint32
	FilterName string
	Header     string
}

// HTTPConnectListeners are the unified HTTP-CONNECT port and the legacy VPN port.
var HTTPConnectListeners = []HTTPConnectListener{
	{Port: HTTPConnectPort, FilterName: HTTPFilterName, Header: DestinationHeader},
	{Port: LegacyVPNPort, FilterName: LegacyHTTPFilterName, Header: LegacyDestinationHeader},
}

// GatewayListeners are the HTTP-CONNECT listeners of a gateway whose Services target the given
// ports: the unified port always, the legacy VPN port only where a Service still targets it
// (gardenlet removes it with its RemoveHTTPProxyLegacyPort feature gate, GEP-30). Without a
// Service (nil), both: a patch of a listener that does not exist applies to nothing.
func GatewayListeners(targetPorts []int32) []HTTPConnectListener {
	if targetPorts == nil {
		return HTTPConnectListeners
	}
	out := []HTTPConnectListener{HTTPConnectListeners[0]}
	for _, p := range targetPorts {
		if p == LegacyVPNPort {
			return append(out, HTTPConnectListeners[1])
		}
	}
	return out
}

// ShardConfigName is the name of a shard's ECDS resource for a listener.
func ShardConfigName(l HTTPConnectListener, sh Shard) string {
	return l.FilterName + "-" + sh.ID()
}

// ShardConfig is the ECDS resource holding a shard's RBAC config for a listener.
func ShardConfig(l HTTPConnectListener, sh Shard) (*corev3.TypedExtensionConfig, error) {
	cfg, err := httpConnectRBAC(sh.Shoots, l.Header, ShardMatcherBudgetBytes)
	if err != nil {
		return nil, err
	}
	return extensionConfig(ShardConfigName(l, sh), cfg)
}

// DispatchConfig is the ECDS resource of a listener's ACL filter: the composite filter, whose
// matcher looks the destination header up in a prefix map (Dispatch) and has the request
// evaluated by the RBAC config of that shard only, fetched by ECDS too. A request that matches
// no shard is not an ACL shoot's: nothing is evaluated and it passes. Without shards the config
// is an RBAC config that allows everything.
func DispatchConfig(l HTTPConnectListener, shards []Shard) (*corev3.TypedExtensionConfig, error) {
	if len(shards) == 0 {
		return extensionConfig(l.FilterName, &httprbacv3.RBAC{})
	}
	keys, err := Dispatch(shards)
	if err != nil {
		return nil, err
	}
	actions := make([]*xdscorev3.TypedExtensionConfig, len(shards))
	for i, sh := range shards {
		name := ShardConfigName(l, sh)
		def, err := anypb.New(&httprbacv3.RBAC{})
		if err != nil {
			return nil, err
		}
		exec := &compositev3.ExecuteFilterAction{DynamicConfig: &compositev3.DynamicConfig{
			Name: name,
			ConfigDiscovery: &corev3.ExtensionConfigSource{
				ConfigSource: adsSource(),
				// Like the listener's filter: fail open until the shard's config arrives.
				DefaultConfig:                    def,
				ApplyDefaultConfigWithoutWarming: true,
				TypeUrls:                         []string{typeURL(&httprbacv3.RBAC{})},
			},
		}}
		if actions[i], err = typedConfig(name, exec); err != nil {
			return nil, err
		}
	}
	entries := map[string]*xdsmatcherv3.Matcher_OnMatch{}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		entries[k] = &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Action{Action: actions[keys[k]]}}
	}
	input, err := typedConfig("destination", &matcherv3.HttpRequestHeaderMatchInput{HeaderName: l.Header})
	if err != nil {
		return nil, err
	}
	composite, err := anypb.New(&compositev3.Composite{})
	if err != nil {
		return nil, err
	}
	ewm := &matchingv3.ExtensionWithMatcher{
		XdsMatcher: &xdsmatcherv3.Matcher{MatcherType: &xdsmatcherv3.Matcher_MatcherTree_{MatcherTree: &xdsmatcherv3.Matcher_MatcherTree{
			Input:    input,
			TreeType: &xdsmatcherv3.Matcher_MatcherTree_PrefixMatchMap{PrefixMatchMap: &xdsmatcherv3.Matcher_MatcherTree_MatchMap{Map: entries}},
		}}},
		ExtensionConfig: &corev3.TypedExtensionConfig{Name: "composite", TypedConfig: composite},
	}
	return extensionConfig(l.FilterName, ewm)
}

func extensionConfig(name string, m proto.Message) (*corev3.TypedExtensionConfig, error) {
	if v, ok := m.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("extension config %s: %w", name, err)
		}
	}
	a, err := anypb.New(m)
	if err != nil {
		return nil, err
	}
	tec := &corev3.TypedExtensionConfig{Name: name, TypedConfig: a}
	if err := tec.Validate(); err != nil {
		return nil, err
	}
	return tec, nil
}
