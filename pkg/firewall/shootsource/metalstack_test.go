package shootsource_test

import (
	"bytes"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/shootsource"
)

// examplePolicy is the first ClusterwideNetworkPolicy of firewall-controller's
// own example, as upstream-crds holds it.
func examplePolicy() *unstructured.Unstructured {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "upstream-crds", "examples", "metal-stack.io_clusterwidenetworkpolicy.yaml"))
	Expect(err).NotTo(HaveOccurred())
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		u := decode(doc)
		if u.GetKind() == "ClusterwideNetworkPolicy" {
			return u
		}
	}
	Fail("no ClusterwideNetworkPolicy in firewall-controller's example")
	return nil
}

// decode reads YAML as the API server's JSON reaches the agent (integers as int64).
func decode(doc []byte) *unstructured.Unstructured {
	data, err := yaml.YAMLToJSON(doc)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	if len(bytes.TrimSpace(data)) == 0 || string(data) == "null" {
		return u
	}
	ExpectWithOffset(1, u.UnmarshalJSON(data)).To(Succeed())
	return u
}

var _ = Describe("metal-stack.io/v1 ClusterwideNetworkPolicies", func() {
	It("converts firewall-controller's example into the same rules of ours", func() {
		p, err := shootsource.FromMetalStack(examplePolicy())
		Expect(err).NotTo(HaveOccurred())
		Expect(shootsource.IsMetalStack(&p)).To(BeTrue())
		Expect(p.Name).To(Equal("clusterwidenetworkpolicy-sample"))
		Expect(p.Spec).To(Equal(fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{
			To:    []fwv1alpha1.IPBlock{{CIDR: "1.1.0.0/16", Except: []string{"1.1.1.0/24"}}, {CIDR: "8.8.8.8/32"}},
			Ports: []fwv1alpha1.PolicyPort{{Protocol: "UDP", Port: ptr.To[int32](53)}, {Port: ptr.To[int32](53)}},
		}}}))
	})

	It("converts toFQDNs, ingress and port ranges, and refuses a field ours does not know", func() {
		u := decode([]byte(`apiVersion: metal-stack.io/v1
kind: ClusterwideNetworkPolicy
metadata: {name: fqdn, namespace: firewall, generation: 3}
spec:
  egress:
  - toFQDNs: [{matchName: example.com}, {matchPattern: "*.example.org"}]
    ports: [{protocol: TCP, port: 8000, endPort: 8080}]
  ingress:
  - from: [{cidr: 192.0.2.0/24}]
`))
		p, err := shootsource.FromMetalStack(u)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Generation).To(Equal(int64(3)))
		Expect(p.Spec.Egress[0].ToFQDNs).To(Equal([]fwv1alpha1.FQDNSelector{{MatchName: "example.com"}, {MatchPattern: "*.example.org"}}))
		Expect(p.Spec.Egress[0].Ports).To(Equal([]fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To[int32](8000), EndPort: ptr.To[int32](8080)}}))
		Expect(p.Spec.Ingress).To(Equal([]fwv1alpha1.IngressRule{{From: []fwv1alpha1.IPBlock{{CIDR: "192.0.2.0/24"}}}}))

		Expect(unstructured.SetNestedField(u.Object, "x", "spec", "egress2")).To(Succeed())
		_, err = shootsource.FromMetalStack(u)
		Expect(err).To(MatchError(And(ContainSubstring("metal-stack.io/v1 ClusterwideNetworkPolicy fqdn: spec"), ContainSubstring("egress2"))))
	})

	It("writes the status in firewall-controller's format", func() {
		Expect(shootsource.MetalStackStatus(fwv1alpha1.PolicyStatus{State: fwv1alpha1.PolicyStateIgnored, Message: "spec.egress[0]: bad", ObservedGeneration: 2})).
			To(Equal(map[string]any{"state": "ignored", "message": "spec.egress[0]: bad"}))
		Expect(shootsource.MetalStackStatus(fwv1alpha1.PolicyStatus{State: fwv1alpha1.PolicyStateDeployed, FQDNs: []fwv1alpha1.FQDNSelectorStatus{
			{MatchName: "example.com", Enforced: true, Addresses: []string{"192.0.2.1", "2001:db8::1"}, AddressCount: 2},
			{MatchPattern: "*.example.org", Message: "not enforced: no proxy"},
		}})).To(Equal(map[string]any{
			"state":   "deployed",
			"message": "*.example.org: not enforced: no proxy",
			"fqdn_state": map[string]any{
				"example.com": []any{
					map[string]any{"fqdn": "example.com", "ips": []any{"192.0.2.1"}, "version": "ip"},
					map[string]any{"fqdn": "example.com", "ips": []any{"2001:db8::1"}, "version": "ip6"},
				},
				"*.example.org": []any{},
			},
		}))
	})
})
