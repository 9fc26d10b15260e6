package istio_test

import (
	"fmt"
	"net/netip"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	matchingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/matching/v3"
	compositev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/composite/v3"
	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	netrbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy/envoytest"
)

// tlsAllowed decides on a connection to host from client on the TLS listener (9443) as Istio
// generated it: the filter chain Istio built for the SNI, its ACL network RBAC filter if any
// (there must be at most one, and first), evaluated with the project's evaluator.
func (g *generated) tlsAllowed(host string, client netip.Addr) bool {
	GinkgoHelper()
	chains := chainsFor(g.listener(9443), host)
	Expect(chains).To(HaveLen(1), "filter chains for SNI %s", host)
	fc := chains[0]
	var acl []*listenerv3.Filter
	for i, f := range fc.GetFilters() {
		if f.GetName() == envoy.NetworkFilterName {
			Expect(i).To(BeZero(), "the ACL filter is not first in %s: %v", host, filterNames(fc))
			acl = append(acl, f)
		}
	}
	Expect(len(acl)).To(BeNumerically("<=", 1), "the ACL filter sits %d times in the chain of %s: %v", len(acl), host, filterNames(fc))
	if len(acl) == 0 {
		return true
	}
	cfg := &netrbacv3.RBAC{}
	Expect(acl[0].GetTypedConfig().UnmarshalTo(cfg)).To(Succeed())
	ok, err := envoytest.NetworkAllowed(cfg, client)
	Expect(err).NotTo(HaveOccurred())
	return ok
}

// httpDecision is the outcome of a CONNECT request on an HTTP-CONNECT listener.
type httpDecision struct {
	allowed bool
	// rbacEvaluations counts the RBAC configs the request was evaluated against.
	rbacEvaluations int
	// shard is the ECDS resource whose RBAC config decided, if any.
	shard string
}

// httpAllowed decides on a CONNECT request with the header from client on the listener of port
// as Istio generated it: the ACL HTTP filter must sit once, right before the router; its config
// comes from ECDS as Istio serves it, either an RBAC config or a composite dispatch to the RBAC
// config of a shard (itself from ECDS).
func (g *generated) httpAllowed(port int, header, value string, client netip.Addr) httpDecision {
	GinkgoHelper()
	chains := httpFilters(g.listener(port))
	Expect(chains).NotTo(BeEmpty(), "no HTTP connection manager on %d", port)
	filterName := filterOn(port)
	var d httpDecision
	for _, filters := range chains {
		idx := -1
		for i, f := range filters {
			if f.GetName() == filterName {
				Expect(idx).To(Equal(-1), "the ACL HTTP filter sits twice on %d", port)
				idx = i
			}
		}
		if idx < 0 {
			d.allowed = true
			continue
		}
		Expect(idx+1).To(BeNumerically("<", len(filters)), "nothing after the ACL filter on %d", port)
		Expect(filters[idx+1].GetName()).To(Equal("envoy.filters.http.router"), "the ACL filter is not right before the router on %d", port)
		name := filters[idx].GetConfigDiscovery()
		Expect(name).NotTo(BeNil(), "the ACL filter on %d takes no config from ECDS", port)
		d = g.decideECDS(filterName, envoytest.Request{Headers: map[string]string{header: value}, Client: client})
	}
	return d
}

// decideECDS evaluates the ECDS resource name for the request.
func (g *generated) decideECDS(name string, req envoytest.Request) httpDecision {
	GinkgoHelper()
	served := g.ecds(name)
	Expect(served).To(HaveKey(name), "Istio serves no extension config %s", name)
	inner, err := served[name].GetTypedConfig().UnmarshalNew()
	Expect(err).NotTo(HaveOccurred())
	switch cfg := inner.(type) {
	case *httprbacv3.RBAC:
		ok, err := envoytest.Allowed(cfg, req)
		Expect(err).NotTo(HaveOccurred())
		return httpDecision{allowed: ok, rbacEvaluations: 1, shard: name}
	case *matchingv3.ExtensionWithMatcher:
		Expect(cfg.GetExtensionConfig().GetTypedConfig().MessageIs(&compositev3.Composite{})).To(BeTrue(), "the matcher wraps %s", cfg.GetExtensionConfig().GetTypedConfig().GetTypeUrl())
		action, err := envoytest.Select(cfg.GetXdsMatcher(), req)
		Expect(err).NotTo(HaveOccurred())
		if action == nil {
			// The composite filter delegates to nothing: the request passes.
			return httpDecision{allowed: true}
		}
		exec := &compositev3.ExecuteFilterAction{}
		Expect(action.GetTypedConfig().UnmarshalTo(exec)).To(Succeed())
		dyn := exec.GetDynamicConfig()
		Expect(dyn).NotTo(BeNil(), "the composite action has no ECDS config: %v", exec)
		Expect(dyn.GetConfigDiscovery().GetTypeUrls()).To(ConsistOf("type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"))
		d := g.decideECDS(dyn.GetName(), req)
		Expect(d.rbacEvaluations).To(Equal(1), "a shard must be an RBAC config")
		return d
	default:
		Fail(fmt.Sprintf("unexpected extension config %T in %s", inner, name))
	}
	return httpDecision{}
}

// filterOn is the name of the ACL HTTP filter (and of its ECDS config) on an HTTP-CONNECT port.
func filterOn(port int) string {
	GinkgoHelper()
	for _, l := range envoy.HTTPConnectListeners {
		if int(l.Port) == port {
			return l.FilterName
		}
	}
	Fail(fmt.Sprintf("port %d is no HTTP-CONNECT port", port))
	return ""
}
