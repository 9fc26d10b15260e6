package metal_test

import (
	"context"
	"encoding/base64"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/metal"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
)

const project = "p1"

func newFirewall(name string) *firewallv1alpha1.Firewall {
	return &firewallv1alpha1.Firewall{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shoot--p1--a"},
		Spec: firewallv1alpha1.FirewallSpec{
			Size: metalapi.Size, Image: metalapi.Image, Partition: "partition-a", Project: project,
			Networks: []string{metalapi.PrivateNetwork(project), metalapi.Internet},
			FirewallTrafficSpec: firewallv1alpha1.FirewallTrafficSpec{
				InternalPrefixes: []string{"10.10.0.0/16"},
				EgressRules:      []firewallv1alpha1.EgressRuleSNAT{{NetworkID: metalapi.Internet, IPs: []string{"203.0.113.200"}}},
			},
		},
	}
}

// agentConfig is a config as the extension writes it, without networks.
var agentConfig = []byte(`sources:
  seed: {kubeconfig: /etc/firewall-agent/seed.kubeconfig, bootstrapKubeconfig: /etc/firewall-agent/bootstrap.kubeconfig, namespace: shoot--p1--a}
controllers:
  firewall: {source: seed}
`)

func startServer(opts metalapi.Options) *metalapi.Server {
	GinkgoHelper()
	server, err := metalapi.New(opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		server.Close()
		server.ExpectNoViolations()
	})
	return server
}

func newProvider(url string, mutate func(*metal.Options)) *metal.Provider {
	GinkgoHelper()
	o := metal.Options{URL: url, AuthType: metalclient.AuthTypeEdit, Key: metalclient.StaticKey(metalapi.EditKey)}
	if mutate != nil {
		mutate(&o)
	}
	p, err := metal.New(o)
	Expect(err).NotTo(HaveOccurred())
	return p
}

var _ = Describe("Provider", func() {
	var (
		server   *metalapi.Server
		provider *metal.Provider
	)
	BeforeEach(func() {
		server = startServer(metalapi.Inventory(project))
		provider = newProvider(server.URL, nil)
	})

	It("allocates in one call with the Firewall's tags, the Ignition userdata with the networks map, and the initial rules", func(ctx SpecContext) {
		fw := newFirewall("fw-a")
		fw.Spec.InitialRules = &firewallv1alpha1.PolicySpec{Egress: []firewallv1alpha1.EgressRule{{
			To: []firewallv1alpha1.IPBlock{{CIDR: "1.1.1.0/24"}}, Ports: []firewallv1alpha1.PolicyPort{{Protocol: "UDP", Port: ptr.To[int32](53)}}}}}
		m, err := provider.Create(ctx, fw, []machine.File{{Path: agentconfigv1alpha1.ConfigPath, Content: agentConfig, Mode: 0o600}})
		Expect(err).NotTo(HaveOccurred())
		Expect(server.Allocations()).To(Equal(1))
		Expect(m.Name).To(Equal("fw-a"))
		Expect(m.Tags).To(HaveKeyWithValue(machine.TagNamespace, "shoot--p1--a"))
		Expect(m.Provisioned).To(BeFalse(), "just allocated, it has not booted: %s", m.Message)
		Expect(provider.Find(ctx, fw)).To(HaveField("Provisioned", BeTrue()), "it phoned home")

		f := server.Firewall(m.ID)
		Expect(*f.Allocation.Hostname).To(Equal("fw-a"))
		Expect(f.Tags).To(ContainElements(
			"firewall.metal-firewall.io/name=fw-a", "firewall.metal-firewall.io/namespace=shoot--p1--a", "firewall.metal-firewall.io/project=p1"))
		Expect(f.Allocation.FirewallRules.Egress).To(ConsistOf(HaveField("Ports", []int32{53})))
		Expect(f.Allocation.FirewallRules.Egress[0].Protocol).To(Equal("udp"))

		ignition, err := base64.StdEncoding.DecodeString(f.Allocation.UserData)
		Expect(err).NotTo(HaveOccurred())
		files, err := metalapi.IgnitionFiles(ignition)
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(HaveLen(2), "the config and the closed table")
		Expect(files[1].Path).To(Equal(metal.ClosedTablePath))
		cfg := &agentconfigv1alpha1.Config{}
		Expect(yaml.Unmarshal(files[0].Content, cfg)).To(Succeed())
		Expect(cfg.Networks).To(ConsistOf(
			agentconfigv1alpha1.Network{ID: metalapi.Internet, Interface: "vrf104009", OutInterface: "vlan104009"},
			agentconfigv1alpha1.Network{ID: metalapi.PrivateNetwork(project), Interface: "vrf3981", OutInterface: "vlan3981"}))
		Expect(cfg.Sources.Seed).NotTo(BeNil(), "the rest of the config stays")
		Expect(cfg.Routing).To(Equal(&agentconfigv1alpha1.Routing{}), "the agent announces its distance through the machine's FRR")
	})

	It("tells the agent how the fabric takes a new distance", func(ctx SpecContext) {
		provider = newProvider(server.URL, func(o *metal.Options) { o.AnnounceBy = agentconfigv1alpha1.AnnounceByUpdate })
		m, err := provider.Create(ctx, newFirewall("fw-a"), []machine.File{{Path: agentconfigv1alpha1.ConfigPath, Content: agentConfig, Mode: 0o600}})
		Expect(err).NotTo(HaveOccurred())
		ignition, err := base64.StdEncoding.DecodeString(server.Firewall(m.ID).Allocation.UserData)
		Expect(err).NotTo(HaveOccurred())
		files, err := metalapi.IgnitionFiles(ignition)
		Expect(err).NotTo(HaveOccurred())
		cfg := &agentconfigv1alpha1.Config{}
		Expect(yaml.Unmarshal(files[0].Content, cfg)).To(Succeed())
		Expect(cfg.Routing).To(Equal(&agentconfigv1alpha1.Routing{AnnounceBy: agentconfigv1alpha1.AnnounceByUpdate}))
	})

	It("finds the machine by its ID, and by its tags when the status lost the ID; never one that was freed", func(ctx SpecContext) {
		fw := newFirewall("fw-a")
		m, err := provider.Create(ctx, fw, nil)
		Expect(err).NotTo(HaveOccurred())
		other, err := provider.Create(ctx, newFirewall("fw-b"), nil)
		Expect(err).NotTo(HaveOccurred())

		Expect(provider.Find(ctx, fw)).To(HaveField("ID", m.ID), "by tags")
		fw.Status.MachineStatus = &firewallv1alpha1.MachineStatus{MachineID: m.ID}
		found, err := provider.Find(ctx, fw)
		Expect(err).NotTo(HaveOccurred())
		Expect(found.ID).To(Equal(m.ID))
		Expect(found.ExternalIPs).To(ConsistOf(HavePrefix("100.64.")), "the internet's address; neither the private nor the underlay one")
		Expect(found.ImageID).To(Equal(metalapi.Image))
		Expect(found.LastEvent).To(HaveField("Event", metal.EventPhonedHome))

		By("a machine ID that names another Firewall's machine is not this Firewall's")
		fw.Status.MachineStatus.MachineID = other.ID
		Expect(provider.Find(ctx, fw)).To(HaveField("ID", m.ID))

		Expect(provider.Delete(ctx, m.ID)).To(Succeed())
		Expect(provider.Delete(ctx, m.ID)).To(Succeed(), "freeing a free machine again")
		Expect(provider.Delete(ctx, "no-such-machine")).To(Succeed(), "a machine the metal-api does not know is gone")
		fw.Status.MachineStatus.MachineID = m.ID
		Expect(provider.Find(ctx, fw)).To(BeNil())
		Expect(server.Allocated()).To(ConsistOf(other.ID))
	})

	It("returns the metal-api's refusal as a definite error with its message", func(ctx SpecContext) {
		fw := newFirewall("fw-a")
		fw.Spec.Size = "huge"
		_, err := provider.Create(ctx, fw, nil)
		Expect(err).To(MatchError("allocating a firewall: the metal-api answered 400 Bad Request: size:huge not found err:no size with id \"huge\" found"))
		Expect(errors.As(err, new(*machine.InDoubtError))).To(BeFalse())

		wrongKey := newProvider(server.URL, func(o *metal.Options) { o.Key = metalclient.StaticKey("stolen?") })
		_, err = wrongKey.Find(ctx, newFirewall("fw-a"))
		Expect(metalclient.StatusCode(err)).To(Equal(403))
		Expect(err.Error()).NotTo(ContainSubstring("stolen?"), "the key is never in an error")
	})

	It("reports an allocation that timed out after the metal-api carried it out as in doubt, and Find shows the machine", func(ctx SpecContext) {
		slow := newProvider(server.URL, func(o *metal.Options) { o.Timeout = 300 * time.Millisecond })
		server.DelayAllocations(time.Second)
		fw := newFirewall("fw-a")
		_, err := slow.Create(ctx, fw, nil)
		Expect(errors.As(err, new(*machine.InDoubtError))).To(BeTrue(), "%v", err)
		Expect(server.Allocations()).To(Equal(1))
		Eventually(server.Unanswered).Should(Equal(1), "the metal-api allocated; its answer found no client")
		Eventually(func(g Gomega) {
			m, err := slow.Find(ctx, fw)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m).NotTo(BeNil())
		}).Should(Succeed())
	})

	It("reports an unreachable metal-api as in doubt on Create and as an error on Find", func(ctx SpecContext) {
		server.SetDown(true)
		_, err := provider.Create(context.WithoutCancel(ctx), newFirewall("fw-a"), nil)
		Expect(err).To(HaveOccurred(), "the network lookup fails first")
		_, err = provider.Find(ctx, newFirewall("fw-a"))
		Expect(err).To(MatchError(ContainSubstring("searching the firewall by its tags")))
		Expect(metalclient.StatusCode(err)).To(BeZero())
	})

	It("refuses bad options at start", func() {
		_, err := metal.New(metal.Options{URL: "ftp://metal", AuthType: metalclient.AuthTypeEdit, Key: metalclient.StaticKey("k")})
		Expect(err).To(MatchError(ContainSubstring("must be an absolute http or https URL")))
		_, err = metal.New(metal.Options{URL: server.URL, AuthType: "Metal-Root", Key: metalclient.StaticKey("k")})
		Expect(err).To(MatchError(ContainSubstring(`HMAC auth type "Metal-Root"`)))
		_, err = metal.New(metal.Options{URL: server.URL, AuthType: metalclient.AuthTypeEdit, Key: metalclient.StaticKey(" \n")})
		Expect(err).To(MatchError(ContainSubstring("HMAC key (inline) is empty")))
	})
})
