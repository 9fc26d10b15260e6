package agent_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/metal-stack/metal-go/api/client/firewall"
	"github.com/metal-stack/metal-go/api/models"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
)

// MetalOutageEnv sets how long the metal-api is down in the outage spec
// (a Go duration). The issue asks for 10 minutes; the default keeps `make
// test` short, and METAL_OUTAGE=10m runs the full outage.
const MetalOutageEnv = "METAL_OUTAGE"

func metalOutage() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(MetalOutageEnv)); err == nil && d > 0 {
		return d
	}
	return 30 * time.Second
}

// The agent binary with sources.metal alone: no Kubernetes anywhere, its
// rules from its allocation in the (test) metal-api, packets through its
// network namespace.
var _ = Describe("firewall agent with sources.metal only", func() {
	const project = "p1"
	var (
		t      *topology
		server *metalapi.Server
		id     string
		logs   *gbytes.Buffer
	)
	egressTo := func(port int32) *models.V1FirewallRules {
		return &models.V1FirewallRules{Egress: []*models.V1FirewallEgressRule{{Protocol: "tcp", Ports: []int32{port}, To: []string{"203.0.113.0/24"}}}}
	}

	BeforeEach(func(ctx SpecContext) {
		t = newTopology()
		// Packets into the allocation's internet network leave a real
		// firewall by its SVI vlan104009 (metal-networker puts the network's
		// addresses there); the agent's SNAT address goes there too.
		// (A veth: this kernel may lack the dummy, vlan and vrf link types.)
		Expect(t.fw.IP("link", "add", fmt.Sprintf("vlan%d", metalapi.InternetVRF), "type", "veth", "peer", "name", "vlanpeer")).To(Succeed())
		Expect(t.fw.IP("link", "set", fmt.Sprintf("vlan%d", metalapi.InternetVRF), "up")).To(Succeed())
		for _, port := range []int{8080, 9090} {
			serve(t.outside, "::", port)
		}
		opts := metalapi.Inventory(project)
		for i := range opts.Networks {
			if opts.Networks[i].ID == metalapi.PrivateNetwork(project) {
				// The node's network: the allocation's private network.
				opts.Networks[i].Prefix = "10.0.1.0/24"
			}
		}
		var err error
		server, err = metalapi.New(opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			server.Close()
			server.ExpectNoViolations()
		})
		edit, err := metalclient.New(metalclient.Options{URL: server.URL, AuthType: metalclient.AuthTypeEdit, Key: metalclient.StaticKey(metalapi.EditKey)})
		Expect(err).NotTo(HaveOccurred())
		resp, err := edit.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(&models.V1FirewallCreateRequest{
			Name: "fw-test", Hostname: "fw-test", Sizeid: ptr.To(metalapi.Size), Imageid: ptr.To(metalapi.Image), Partitionid: ptr.To("partition-a"), Projectid: ptr.To(project), SSHPubKeys: []string{},
			Networks: []*models.V1MachineAllocationNetwork{
				{Networkid: ptr.To(metalapi.PrivateNetwork(project)), Autoacquire: ptr.To(true)},
				{Networkid: ptr.To(metalapi.Internet), Autoacquire: ptr.To(true)},
			},
			FirewallRules: egressTo(8080),
			UserData:      base64.StdEncoding.EncodeToString([]byte(`{"ignition":{"version":"3.5.0"}}`)),
		}), nil)
		Expect(err).NotTo(HaveOccurred())
		id = *resp.Payload.ID

		By("starting the agent binary in the firewall's namespace, reaching the metal-api as a machine would")
		fwdCtx, stopForward := context.WithCancel(context.Background())
		DeferCleanup(stopForward)
		port, err := framework.PortOf(server.URL)
		Expect(err).NotTo(HaveOccurred())
		Expect(roottest.ForwardLoopback(fwdCtx, t.fw, port)).To(Succeed())
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "metal.hmac"), []byte(metalapi.ViewKey+"\n"), 0o600)).To(Succeed())
		cfg := filepath.Join(dir, "config.yaml")
		Expect(os.WriteFile(cfg, []byte("name: fw-test\nsources:\n  metal: {url: "+server.URL+", hmacFile: "+filepath.Join(dir, "metal.hmac")+
			", type: Metal-View, projectID: "+project+", allowHTTP: true}\ncontrollers:\n  firewall: {source: metal}\n  cwnp: {source: metal}\n"), 0o600)).To(Succeed())
		logs = gbytes.NewBuffer()
		cmd := exec.Command("ip", "netns", "exec", t.fw.Name, binary, "--last-good-ruleset", lastGoodPath(), "--config", cfg, "--metal-interval", "500ms", "--metrics-bind-address", "0",
			"--snat-address-record", filepath.Join(dir, "snat.json"))
		cmd.Stdout, cmd.Stderr = io.MultiWriter(logs, GinkgoWriter), io.MultiWriter(logs, GinkgoWriter)
		Expect(cmd.Start()).To(Succeed())
		DeferCleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	})

	It("enforces the allocation's rules, follows their changes, keeps them through an outage and catches up", func() {
		By("the rules of the allocation are in the kernel")
		Eventually(logs).WithTimeout(30 * time.Second).Should(gbytes.Say("ruleset applied"))
		Expect(t.fw.Exec("ip", "-o", "addr", "show", "dev", fmt.Sprintf("vlan%d", metalapi.InternetVRF))).To(ContainSubstring("inet 100.64."), "the allocation's SNAT address")
		expectAllowed(t.node, outsideV4, 8080)
		expectDropped(t.node, outsideV4, 9090)

		By("a rule changed in the metal-api reaches the kernel")
		Expect(server.SetFirewallRules(id, egressTo(9090))).To(Succeed())
		Eventually(func() error { _, err := connect(t.node, outsideV4, 9090); return err }).WithTimeout(30 * time.Second).Should(Succeed())
		expectDropped(t.node, outsideV4, 8080)

		outage := metalOutage()
		By("the metal-api is down for " + outage.String() + " (METAL_OUTAGE) and its rules change meanwhile: the rules in force stay")
		server.SetDown(true)
		Expect(server.SetFirewallRules(id, egressTo(8080))).To(Succeed())
		Eventually(logs).WithTimeout(30 * time.Second).Should(gbytes.Say("reading the allocation from the metal-api; the ruleset in force stays"))
		for end := time.Now().Add(outage); time.Now().Before(end); {
			expectAllowed(t.node, outsideV4, 9090)
			expectDropped(t.node, outsideV4, 8080)
			time.Sleep(min(5*time.Second, time.Until(end)+time.Millisecond))
		}

		By("the metal-api answers garbage for a while: still the same rules")
		server.SetDown(false)
		server.SetGarbage(true)
		Consistently(func() error { _, err := connect(t.node, outsideV4, 9090); return err }).WithTimeout(3 * time.Second).Should(Succeed())
		expectDropped(t.node, outsideV4, 8080)

		By("the metal-api is back: the agent catches up with the change it missed")
		server.SetGarbage(false)
		Eventually(func() error { _, err := connect(t.node, outsideV4, 8080); return err }).WithTimeout(30 * time.Second).Should(Succeed())
		expectDropped(t.node, outsideV4, 9090)
	})
})
