package agent_test

import (
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/metal-stack/metal-go/api/client/firewall"
	"github.com/metal-stack/metal-go/api/models"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
)

// The agent with sources.metal alone: no Kubernetes, only the metal-api.
var _ = Describe("Agent with sources.metal", func() {
	const project = "p1"
	var (
		server *metalapi.Server
		fake   *fakeApplier
		logs   *gbytes.Buffer
		a      *agent.Agent
		id     string
	)
	rules := func(port int32) *models.V1FirewallRules {
		return &models.V1FirewallRules{Egress: []*models.V1FirewallEgressRule{{Protocol: "tcp", Ports: []int32{port}, To: []string{"198.51.100.0/24"}}}}
	}
	BeforeEach(func(ctx SpecContext) {
		var err error
		server, err = metalapi.New(metalapi.Inventory(project))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			server.Close()
			server.ExpectNoViolations()
		})
		edit, err := metalclient.New(metalclient.Options{URL: server.URL, AuthType: metalclient.AuthTypeEdit, Key: metalclient.StaticKey(metalapi.EditKey)})
		Expect(err).NotTo(HaveOccurred())
		resp, err := edit.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(&models.V1FirewallCreateRequest{
			Name: "fw-a", Hostname: "fw-a", Sizeid: ptr.To(metalapi.Size), Imageid: ptr.To(metalapi.Image), Partitionid: ptr.To("partition-a"), Projectid: ptr.To(project), SSHPubKeys: []string{},
			Networks: []*models.V1MachineAllocationNetwork{
				{Networkid: ptr.To(metalapi.PrivateNetwork(project)), Autoacquire: ptr.To(true)},
				{Networkid: ptr.To(metalapi.Internet), Autoacquire: ptr.To(true)},
			},
			FirewallRules: rules(443),
			UserData:      base64.StdEncoding.EncodeToString([]byte(`{"ignition":{"version":"3.5.0"}}`)),
		}), nil)
		Expect(err).NotTo(HaveOccurred())
		id = *resp.Payload.ID

		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "metal.hmac"), []byte(metalapi.ViewKey), 0o600)).To(Succeed())
		path := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(path, []byte("name: fw-a\nsources:\n  metal: {url: "+server.URL+", hmacFile: "+filepath.Join(dir, "metal.hmac")+", type: Metal-View, projectID: "+project+", allowHTTP: true}\n"+
			"controllers:\n  firewall: {source: metal}\n  cwnp: {source: metal}\n"), 0o600)).To(Succeed())
		fake = &fakeApplier{}
		logs = gbytes.NewBuffer()
		a = &agent.Agent{ConfigPath: path, Applier: fake, Log: slog.New(slog.NewTextHandler(logs, nil)), Metrics: metrics.New("v-test", nil, nil),
			PollInterval: 10 * time.Millisecond, ResyncInterval: time.Hour, MetalInterval: 20 * time.Millisecond}
	})
	run := func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- a.Run(ctx) }()
		DeferCleanup(func() { cancel(); Eventually(done).Should(Receive(BeNil())) })
	}

	It("applies the allocation's prefixes, SNAT and rules, follows their changes, and applies nothing while nothing changes", func() {
		run()
		Eventually(fake.last).Should(And(ContainSubstring("10.10.0.0/16"), ContainSubstring(`oifname "vlan104009"`), ContainSubstring("198.51.100.0/24 . tcp . 443")))
		n := fake.count()
		Consistently(fake.count, 200*time.Millisecond).Should(Equal(n), "an unchanged allocation is not applied again")

		Expect(server.SetFirewallRules(id, rules(8443))).To(Succeed())
		Eventually(fake.last).Should(And(ContainSubstring(". tcp . 8443"), Not(ContainSubstring(". tcp . 443 "))))
		Expect(scrape(a.Metrics)).To(HaveKeyWithValue(`firewall_agent_source_up{source="metal"}`, 1.0))
	})

	It("keeps the ruleset while the metal-api is down or answers garbage, and catches up after", func() {
		run()
		Eventually(fake.last).Should(ContainSubstring(". tcp . 443"))
		n := fake.count()

		server.SetDown(true)
		Expect(server.SetFirewallRules(id, rules(9443))).To(Succeed())
		Eventually(logs).Should(gbytes.Say(`reading the allocation from the metal-api; the ruleset in force stays`))
		Consistently(fake.count, 200*time.Millisecond).Should(Equal(n))
		Expect(scrape(a.Metrics)).To(HaveKeyWithValue(`firewall_agent_source_up{source="metal"}`, 0.0))

		server.SetDown(false)
		server.SetGarbage(true)
		Consistently(fake.count, 200*time.Millisecond).Should(Equal(n), "garbage is not a ruleset")

		server.SetGarbage(false)
		Eventually(fake.last).Should(ContainSubstring(". tcp . 9443"))
	})

	It("retries a refused apply although the metal-api reports no further change", func() {
		fake.mu.Lock()
		fake.failNext = true
		fake.mu.Unlock()
		run()
		Eventually(logs).Should(gbytes.Say(`apply failed; the previous ruleset stays in force`))
		Eventually(fake.last).Should(ContainSubstring(". tcp . 443"))
	})
})
