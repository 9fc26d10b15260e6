package istio_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
)

// gardenlet's RemoveHTTPProxyLegacyPort (GEP-30): the gateway's Service and
// Istio's values without the tls-tunnel port, as Gardener's deployer renders
// them, and the listeners istiod generates from that.
var _ = Describe("The ACL on a seed with gardenlet's RemoveHTTPProxyLegacyPort", Ordered, func() {
	var (
		ctx = context.Background()
		s   *seed
		gen *generated
	)

	BeforeAll(func() {
		def, _, _ := defaultGateways()
		s = newSeedWith(ctx, []*gateway{def}, []*shoot{
			{namespace: "shoot--p--a", hosts: []string{"api.a.p.example.com"}, gateway: def,
				rule: `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.0/24"]}}`},
		}, false)
		s.reconcile(ctx)
		gen = s.generate(ctx, def)
	})

	It("patches 8443 and serves its config; Istio builds no 8132 listener, and the ACL deploys nothing for it", func() {
		for name, l := range gen.listeners {
			Expect(l.GetAddress().GetSocketAddress().GetPortValue()).NotTo(BeEquivalentTo(envoy.LegacyVPNPort), "listener %s", name)
		}
		chains := httpFilters(gen.listener(envoy.HTTPConnectPort))
		Expect(chains).NotTo(BeEmpty())
		for _, filters := range chains {
			Expect(filters[len(filters)-2].GetName()).To(Equal(envoy.HTTPFilterName))
		}
		Expect(gen.ecds(envoy.HTTPFilterName)).To(HaveKey(envoy.HTTPFilterName))

		efs := &istionetworkingv1alpha3.EnvoyFilterList{}
		Expect(s.client.List(ctx, efs, client.InNamespace(s.gateways[0].namespace))).To(Succeed())
		Expect(efs.Items).NotTo(BeEmpty())
		for _, ef := range efs.Items {
			for _, p := range ef.Spec.ConfigPatches {
				Expect(p.GetMatch().GetListener().GetPortNumber()).NotTo(BeEquivalentTo(envoy.LegacyVPNPort), "EnvoyFilter %s", ef.Name)
				Expect(p.GetPatch().GetValue().GetFields()["name"].GetStringValue()).NotTo(HavePrefix(envoy.LegacyHTTPFilterName), "EnvoyFilter %s", ef.Name)
			}
		}
	})
})
