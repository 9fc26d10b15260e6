package metalsource_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/metal-stack/metal-go/api/models"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metalsource"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
)

const project = "p1"

// allocate allocates a firewall named name with rules, as metalctl or the
// extension would, and returns its machine ID.
func allocate(ctx context.Context, server *metalapi.Server, name string, rules *models.V1FirewallRules) string {
	GinkgoHelper()
	api, err := metalclient.New(metalclient.Options{URL: server.URL, AuthType: metalclient.AuthTypeEdit, Key: metalclient.StaticKey(metalapi.EditKey)})
	Expect(err).NotTo(HaveOccurred())
	resp, err := api.Firewall.AllocateFirewall(metalapiAllocate(ctx, name, rules), nil)
	Expect(err).NotTo(HaveOccurred())
	return *resp.Payload.ID
}

var _ = Describe("Source", func() {
	var (
		server *metalapi.Server
		src    *metalsource.Source
	)
	BeforeEach(func() {
		var err error
		server, err = metalapi.New(metalapi.Inventory(project))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			server.Close()
			server.ExpectNoViolations()
		})
		src = &metalsource.Source{Config: agentconfigv1alpha1.MetalSource{URL: server.URL, HMAC: metalapi.ViewKey, ProjectID: project}, Name: "fw-a",
			Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil))}
	})

	It("finds its machine by project and name and reads prefixes, SNAT, networks and rules from its allocation", func(ctx SpecContext) {
		id := allocate(ctx, server, "fw-a", &models.V1FirewallRules{
			Egress:  []*models.V1FirewallEgressRule{{Protocol: "udp", Ports: []int32{53}, To: []string{"1.1.1.0/24"}}},
			Ingress: []*models.V1FirewallIngressRule{{Ports: []int32{22}, From: []string{"192.0.2.0/24"}}, {Ports: []int32{80}, From: []string{"192.0.2.0/24"}, To: []string{"10.10.0.5/32"}}},
		})
		allocate(ctx, server, "fw-b", nil)
		a, err := src.Read(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(a.MachineID).To(Equal(id))
		Expect(a.Firewall.InternalPrefixes).To(Equal([]string{"10.10.0.0/16"}))
		Expect(a.Firewall.EgressRules).To(ConsistOf(And(HaveField("Interface", "vlan104009"), HaveField("IPs", ConsistOf(HavePrefix("100.64."))))))
		Expect(a.Networks).To(ConsistOf(
			agentconfigv1alpha1.Network{ID: metalapi.Internet, Interface: "vrf104009", OutInterface: "vlan104009"},
			agentconfigv1alpha1.Network{ID: metalapi.PrivateNetwork(project), Interface: "vrf3981", OutInterface: "vlan3981"}), "no underlay")
		Expect(a.Policies).To(ConsistOf(
			HaveField("Egress", ConsistOf(firewallv1alpha1.EgressRule{To: []firewallv1alpha1.IPBlock{{CIDR: "1.1.1.0/24"}}, Ports: []firewallv1alpha1.PolicyPort{{Protocol: "UDP", Port: ptr.To[int32](53)}}})),
			HaveField("Ingress", ConsistOf(firewallv1alpha1.IngressRule{From: []firewallv1alpha1.IPBlock{{CIDR: "192.0.2.0/24"}}, Ports: []firewallv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To[int32](22)}}})),
		))
		Expect(a.Ignored).To(ConsistOf(ContainSubstring("ingress[1]: ingress rules with destinations (to) are not enforced")))
	})

	It("returns nothing while the allocation's changed time stays, and all again after Forget or a change", func(ctx SpecContext) {
		id := allocate(ctx, server, "fw-a", nil)
		a, err := src.Read(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(a).NotTo(BeNil())
		Expect(src.Read(ctx)).To(BeNil(), "unchanged")
		src.Forget()
		Expect(src.Read(ctx)).NotTo(BeNil())
		Expect(server.SetFirewallRules(id, &models.V1FirewallRules{Egress: []*models.V1FirewallEgressRule{{Ports: []int32{443}, To: []string{"8.8.8.0/24"}}}})).To(Succeed())
		a, err = src.Read(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(a).NotTo(BeNil(), "changed rules")
		Expect(a.Policies).To(HaveLen(1))
	})

	// The metal-api gives `changed` in milliseconds: a change of the rules
	// within the millisecond of the last read carries the same time.
	It("sees a change of the rules that keeps the allocation's changed time", func(ctx SpecContext) {
		src.Transport = sameChanged{}
		id := allocate(ctx, server, "fw-a", nil)
		Expect(src.Read(ctx)).NotTo(BeNil())
		Expect(src.Read(ctx)).To(BeNil(), "unchanged")
		Expect(server.SetFirewallRules(id, &models.V1FirewallRules{Egress: []*models.V1FirewallEgressRule{{Ports: []int32{443}, To: []string{"8.8.8.0/24"}}}})).To(Succeed())
		a, err := src.Read(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(a).NotTo(BeNil(), "changed rules, same changed time")
		Expect(a.Policies).To(HaveLen(1))
		Expect(src.Read(ctx)).To(BeNil(), "unchanged again")
	})

	It("fails, keeping nothing new, when the metal-api is down, answers garbage, or has no such firewall", func(ctx SpecContext) {
		_, err := src.Read(ctx)
		Expect(err).To(MatchError(`the metal-api has no firewall named "fw-a" in project p1`))
		allocate(ctx, server, "fw-a", nil)
		server.SetDown(true)
		_, err = src.Read(ctx)
		Expect(err).To(HaveOccurred())
		server.SetDown(false)
		server.SetGarbage(true)
		_, err = src.Read(ctx)
		Expect(err).To(HaveOccurred())
		server.SetGarbage(false)
		Expect(src.Read(ctx)).NotTo(BeNil())
	})

	It("reads the key from its file on every request, and says so when the key is refused", func(ctx SpecContext) {
		allocate(ctx, server, "fw-a", nil)
		key := filepath.Join(GinkgoT().TempDir(), "metal.hmac")
		Expect(os.WriteFile(key, []byte("wrong\n"), 0o600)).To(Succeed())
		src.Config.HMAC, src.Config.HMACFile = "", key
		_, err := src.Read(ctx)
		Expect(metalclient.StatusCode(err)).To(Equal(403))
		Expect(os.WriteFile(key, []byte(metalapi.ViewKey+"\n"), 0o600)).To(Succeed())
		Expect(src.Read(ctx)).NotTo(BeNil())
	})
})
