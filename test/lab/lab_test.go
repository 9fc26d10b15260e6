package lab_test

import (
	"context"
	"encoding/base64"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/metal-stack/metal-go/api/models"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/metal"
	"github.com/metal-firewall/gardener-extension-firewall/test/lab"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalimage"
)

// A firewall with a static config, booted in the lab from a stock image
// with the agent put in by the image recipe: the lab's own parts work.
var _ = Describe("the lab", Ordered, func() {
	var l *lab.Lab

	BeforeAll(func(ctx SpecContext) {
		var err error
		l, err = lab.Start(ctx, lab.Options{
			Dir: labDir, TenantVRF: 3981, InternetVRF: 104009, Share: GinkgoT().TempDir(),
			Routes: []netip.Prefix{netip.MustParsePrefix("100.64.0.0/16")},
			Log:    func(f string, a ...any) { GinkgoWriter.Printf(f+"\n", a...) },
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(l.Close)
	}, NodeTimeout(5*time.Minute))

	It("boots a firewall whose agent filters the node's traffic to this host", func(ctx SpecContext) {
		By("listening on this host, the internet")
		seen := make(chan string, 16)
		for _, port := range []string{"7000", "7001"} {
			ln, err := net.Listen("tcp", net.JoinHostPort(lab.HostAddress.String(), port))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(ln.Close)
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					seen <- c.LocalAddr().String() + " from " + c.RemoteAddr().String()
					_ = c.Close()
				}
			}()
		}
		cfg := `sources:
  static:
    firewall:
      internalPrefixes: [10.10.0.0/16]
    cwnp:
      egress:
      - to: [{cidr: 198.51.100.1/32}]
        ports: [{protocol: TCP, port: 7000}]
controllers:
  firewall: {source: static}
  cwnp: {source: static}
`
		userdata, err := metal.Userdata([]machine.File{{Path: agentconfigv1alpha1.ConfigPath, Content: []byte(cfg), Mode: 0o600}}, metal.Setup{DefaultRouteVRF: "vrf104009"})
		Expect(err).NotTo(HaveOccurred())
		alloc := &metalimage.Allocation{Hostname: "fw-lab", Project: "p1", ASN: 4200003073, UserData: base64.StdEncoding.EncodeToString(userdata),
			Networks: []metalimage.Network{
				{ID: "private-p1", VRF: 3981, Private: true, Prefixes: []string{"10.10.0.0/16"}, IPs: []string{"10.10.0.1"}},
				{ID: "internet", VRF: 104009, NAT: true, Prefixes: []string{"100.64.0.0/16"}, IPs: []string{"100.64.0.1"}, DestinationPrefixes: []string{"0.0.0.0/0"}},
				{ID: "underlay", Underlay: true, Prefixes: []string{"10.1.0.0/24"}, IPs: []string{"10.1.0.1"}},
			},
			FirewallRules: &models.V1FirewallRules{}}
		in, err := metalimage.Install(alloc)
		Expect(err).NotTo(HaveOccurred())
		m, err := l.Install(ctx, "fw-lab", lab.Image{Files: map[string]lab.File{agentconfigv1alpha1.BinaryPath: {Source: agentBinary, Mode: 0o755}}}, in)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) { _ = m.Delete(ctx) })
		Expect(m.IgnitionLog(ctx)).NotTo(ContainSubstring("failed"))
		Expect(m.Boot(ctx)).To(Succeed())
		state, err := m.WaitBooted(ctx)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Println("booted:", state)

		Eventually(func() (string, error) { return m.Exec(ctx, "nft list ruleset") }).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).
			Should(ContainSubstring("table inet firewall-agent"))
		Eventually(func() (string, error) {
			return l.Run(ctx, "ip netns exec node timeout 3 bash -c '</dev/tcp/"+lab.HostAddress.String()+"/7000' && echo ok")
		}).WithTimeout(2*time.Minute).WithPolling(3*time.Second).Should(ContainSubstring("ok"), func() string {
			out, _ := m.Exec(ctx, "journalctl --no-pager -u firewall-agent | tail -30; nft list ruleset; ip route show vrf vrf3981; ip route show vrf vrf104009")
			if os.Getenv("LAB_HOLD") != "" {
				GinkgoWriter.Println("holding the lab for 15 minutes")
				time.Sleep(15 * time.Minute)
			}
			return out
		})
		Eventually(seen).Should(Receive(ContainSubstring(":7000 from 100.64.0.1:")))
	})
})
