package agent_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
)

const frrConf = `frr version 8.4
router bgp 4200000001
 neighbor FABRIC peer-group
 neighbor FABRIC remote-as external
 !
 address-family l2vpn evpn
  neighbor FABRIC activate
  advertise-all-vni
 exit-address-family
!
line vty
`

var _ = Describe("The distance the agent announces", func() {
	var (
		dir string
		a   *agent.Agent
		cfg *agentconfigv1alpha1.Config
	)
	// program stands in for FRR's: bgpd's summary shows no peer (nothing
	// to wait for after a reload), anything else prints and exits.
	program := func(name, exit string) string {
		p := filepath.Join(dir, name)
		// Replaced whole: the agent's worker may run the old one meanwhile.
		Expect(os.WriteFile(p+".new", []byte("#!/bin/sh\ncase \"$*\" in *'summary json'*) echo '{\"peers\":{}}'; exit 0;; esac\necho refused by "+name+"\nexit "+exit+"\n"), 0o755)).To(Succeed())
		Expect(os.Rename(p+".new", p)).To(Succeed())
		return p
	}
	firewall := func(distance int32) *fwv1alpha1.Firewall {
		return &fwv1alpha1.Firewall{Spec: fwv1alpha1.FirewallSpec{Distance: distance}}
	}
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "frr.conf"), []byte(frrConf), 0o640)).To(Succeed())
		a = &agent.Agent{Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil)), Vtysh: program("vtysh", "0"), FRRReload: program("reload", "0")}
		cfg = &agentconfigv1alpha1.Config{Routing: &agentconfigv1alpha1.Routing{FRRConfig: filepath.Join(dir, "frr.conf")}}
	})

	It("is not announced without routing, and says so", func(ctx context.Context) {
		Expect(agent.AnnounceDistance(a, ctx, &agentconfigv1alpha1.Config{}, firewall(3))).To(Succeed())
		supported, d := agent.DistanceStatus(a)
		Expect(supported).To(BeFalse())
		Expect(d).To(BeNil())
	})

	It("announces nothing on a machine without FRR's configuration, and says it cannot", func(ctx context.Context) {
		cfg.Routing.FRRConfig = filepath.Join(dir, "missing.conf")
		Expect(agent.AnnounceDistance(a, ctx, cfg, firewall(3))).To(Succeed())
		supported, d := agent.DistanceStatus(a)
		Expect(supported).To(BeFalse(), "the manager need not wait for it")
		Expect(d).To(BeNil())
	})

	It("reports the distance in force, keeps it when the seed is not read, and keeps the old one when FRR refuses the new", func(ctx context.Context) {
		supported, _ := agent.DistanceStatus(a)
		Expect(supported).To(BeFalse(), "before the first round")
		Expect(agent.AnnounceDistance(a, ctx, cfg, nil)).To(Succeed())
		supported, d := agent.DistanceStatus(a)
		Expect(supported).To(BeTrue())
		Expect(d).To(BeNil(), "none in force before the Firewall was read")

		Expect(agent.AnnounceDistance(a, ctx, cfg, firewall(3))).To(Succeed())
		_, d = agent.DistanceStatus(a)
		Expect(d).To(HaveValue(BeEquivalentTo(3)))
		data, err := os.ReadFile(cfg.Routing.FRRConfig)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(ContainSubstring(" set as-path prepend 4200000001 4200000001 4200000001\n"))

		Expect(agent.AnnounceDistance(a, ctx, cfg, nil)).To(Succeed())
		_, d = agent.DistanceStatus(a)
		Expect(d).To(HaveValue(BeEquivalentTo(3)), "the seed did not answer: the distance in force stays")

		program("vtysh", "1")
		err = agent.AnnounceDistance(a, ctx, cfg, firewall(8))
		Expect(err).To(MatchError(And(ContainSubstring("announcing distance 8: FRR refuses the configuration"), ContainSubstring("refused by vtysh"))))
		after, err := os.ReadFile(cfg.Routing.FRRConfig)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(Equal(data), "the old configuration stays")
		_, d = agent.DistanceStatus(a)
		Expect(d).To(HaveValue(BeEquivalentTo(3)), "and the old distance is reported")
	})

	It("does not hold the agent's round while FRR's reload takes long, and reports the old distance meanwhile", func(ctx context.Context) {
		Expect(agent.AnnounceDistance(a, ctx, cfg, firewall(3))).To(Succeed())
		started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
		// As FRR 8.4's reload in the lab: it takes longer than the heartbeat may pause.
		Expect(os.WriteFile(a.FRRReload+".new", []byte("#!/bin/sh\n: >"+started+"\nwhile [ ! -e "+release+" ]; do sleep 0.05; done\n"), 0o755)).To(Succeed())
		Expect(os.Rename(a.FRRReload+".new", a.FRRReload)).To(Succeed())

		Expect(agent.AskDistance(a, ctx, cfg, firewall(8))).To(Succeed())
		Eventually(func() string { return started }).Should(BeAnExistingFile())
		_, d := agent.DistanceStatus(a)
		Expect(d).To(HaveValue(BeEquivalentTo(3)), "the round went on while the reload runs, reporting the distance in force")
		Expect(agent.AskDistance(a, ctx, cfg, firewall(8))).To(Succeed(), "a round asks again meanwhile")

		Expect(os.WriteFile(release, nil, 0o644)).To(Succeed())
		Eventually(func() *int32 { _, d := agent.DistanceStatus(a); return d }).Should(HaveValue(BeEquivalentTo(8)))
	})

	It("holds the round until the first distance is in force: the first heartbeat, which makes the firewall Ready, comes after FRR's reload", func(ctx context.Context) {
		started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
		Expect(os.WriteFile(a.FRRReload+".new", []byte("#!/bin/sh\n: >"+started+"\nwhile [ ! -e "+release+" ]; do sleep 0.05; done\n"), 0o755)).To(Succeed())
		Expect(os.Rename(a.FRRReload+".new", a.FRRReload)).To(Succeed())
		returned := make(chan error, 1)
		go func() { returned <- agent.AskDistance(a, ctx, cfg, firewall(0)) }()
		Eventually(func() string { return started }).Should(BeAnExistingFile())
		Consistently(returned, 300*time.Millisecond).ShouldNot(Receive(), "the round waits for the reload")
		Expect(os.WriteFile(release, nil, 0o644)).To(Succeed())
		Eventually(returned).Should(Receive(BeNil()))
		_, d := agent.DistanceStatus(a)
		Expect(d).To(HaveValue(BeEquivalentTo(0)))
	})
})
