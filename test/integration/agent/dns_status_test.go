package agent_test

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

const dnsShootAgentConfig = `name: fw-0
sources:
  shoot: {namespace: firewall, kubeconfig: %s}
  static:
    firewall: {internalPrefixes: ["10.0.1.0/24"]}
controllers:
  firewall: {source: static}
  cwnp:     {source: shoot}
dns: {upstreams: [%s], maxSelectors: 2}
`

var _ = Describe("toFQDNs in the shoot's policies", func() {
	It("reports each selector's allowed addresses in the policy's status, or why it is not enforced", func(ctx SpecContext) {
		t := newTopology()
		const allowedAddr, wildAddr, targetAddr = "203.0.113.10", "203.0.113.12", "203.0.113.14"
		for _, a := range []string{resolverV4, allowedAddr, wildAddr, targetAddr} {
			Expect(t.outside.IP("addr", "add", a+"/24", "dev", "eth0")).To(Succeed())
		}
		serve(t.outside, "::", servicePort)
		dnsmasqOn(t.outside, []string{resolverV4}, "--host-record=allowed.example.com,"+allowedAddr,
			"--host-record=x.wild.example.com,"+wildAddr, "--host-record=target.example.org,"+targetAddr)

		admin, kubeconfig := startShoot(ctx)
		reachShootFrom(t.fw, kubeconfig)
		dir, kubeconfigPath := writeShootKubeconfig(kubeconfig)
		cfgPath := filepath.Join(dir, "config.yaml")
		writeConfig(cfgPath, fmt.Sprintf(dnsShootAgentConfig, kubeconfigPath, resolverV4))

		ports := []fwv1alpha1.PolicyPort{{Port: ptr.To[int32](servicePort)}}
		web := &fwv1alpha1.ClusterwideNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "a-web", Namespace: "firewall"},
			Spec: fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{Ports: ports,
				ToFQDNs: []fwv1alpha1.FQDNSelector{{MatchName: "allowed.example.com"}, {MatchPattern: "*.wild.example.com"}}}}}}
		// Its first selector is a third distinct one: over maxSelectors.
		more := &fwv1alpha1.ClusterwideNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "b-more", Namespace: "firewall"},
			Spec: fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{Ports: ports,
				ToFQDNs: []fwv1alpha1.FQDNSelector{{MatchName: "target.example.org"}, {MatchName: "ALLOWED.example.com."}}}}}}
		Expect(admin.Create(ctx, web)).To(Succeed())
		Expect(admin.Create(ctx, more)).To(Succeed())
		startAgentProcess(t.fw, cfgPath)

		status := func(p *fwv1alpha1.ClusterwideNetworkPolicy) func(g Gomega) fwv1alpha1.PolicyStatus {
			return func(g Gomega) fwv1alpha1.PolicyStatus {
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
				return p.Status
			}
		}
		By("before any answer: enforced, nothing allowed yet")
		Eventually(status(web)).WithTimeout(30 * time.Second).Should(Equal(fwv1alpha1.PolicyStatus{State: fwv1alpha1.PolicyStateDeployed, ObservedGeneration: 1,
			FQDNs: []fwv1alpha1.FQDNSelectorStatus{{MatchName: "allowed.example.com", Enforced: true}, {MatchPattern: "*.wild.example.com", Enforced: true}}}))

		By("after the nodes resolved the names: the addresses allowed now")
		Expect(lookup(t.node, resolverV4, "udp", "allowed.example.com.", dns.TypeA)).To(Equal([]string{allowedAddr}))
		Expect(lookup(t.node, resolverV4, "udp", "x.wild.example.com.", dns.TypeA)).To(Equal([]string{wildAddr}))
		Expect(lookup(t.node, resolverV4, "udp", "target.example.org.", dns.TypeA)).To(Equal([]string{targetAddr}))
		Eventually(status(web)).WithTimeout(10 * time.Second).Should(HaveField("FQDNs", []fwv1alpha1.FQDNSelectorStatus{
			{MatchName: "allowed.example.com", Enforced: true, Addresses: []string{allowedAddr}, AddressCount: 1},
			{MatchPattern: "*.wild.example.com", Enforced: true, Addresses: []string{wildAddr}, AddressCount: 1},
		}))
		Eventually(status(more)).WithTimeout(10 * time.Second).Should(HaveField("FQDNs", []fwv1alpha1.FQDNSelectorStatus{
			{MatchName: "target.example.org", Message: "not enforced: the firewall enforces at most 2 distinct selectors (dns.maxSelectors)"},
			{MatchName: "ALLOWED.example.com.", Enforced: true, Addresses: []string{allowedAddr}, AddressCount: 1},
		}))
		Expect(more.Status.State).To(Equal(fwv1alpha1.PolicyStateDeployed))
		expectFirstSYN(t.node, allowedAddr)
		expectDropped(t.node, targetAddr, servicePort)
	})
})
