package agent_test

import (
	"errors"
	"fmt"
	"net/netip"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/netdev"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

var _ = Describe("the metrics for the shoot", func() {
	const metricsConfig = `
sources:
  static: {firewall: {internalPrefixes: ["10.0.1.0/24"]}}
controllers:
  firewall: {source: static}
networks: [{id: internet, interface: vrf104009}, {id: shoot-net, interface: vrf3981}]
metrics: {internalNetwork: %s}
`
	parse := func(network string) *agentconfigv1alpha1.Config {
		GinkgoHelper()
		cfg, err := config.Parse([]byte(fmt.Sprintf(metricsConfig, network)))
		Expect(err).NotTo(HaveOccurred())
		return cfg
	}
	addrs := map[string][]netip.Addr{"vrf3981": {netip.MustParseAddr("10.0.1.1"), netip.MustParseAddr("fd00::1")}, "vrf104009": nil}
	lookup := func(iface string) ([]netip.Addr, error) {
		a, ok := addrs[iface]
		if !ok {
			return nil, errors.New("no such interface")
		}
		return a, nil
	}

	It("guards the port on the internal network's interface", func() {
		rs, err := agent.Desired(parse("shoot-net"), agent.Inputs{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ruleset.Render(rs)).To(And(
			ContainSubstring(`iifname "vrf3981" meta l4proto tcp th dport 2112 ip saddr @internal_v4 counter accept`),
			ContainSubstring(`meta l4proto tcp th dport 2112 counter drop`)))
	})

	It("neither guards nor serves on a network the machine has no interface for, and still applies the rules", func() {
		cfg := parse("underlay")
		rs, err := agent.Desired(cfg, agent.Inputs{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ruleset.Render(rs)).NotTo(ContainSubstring("dport 2112"))
		_, err = agent.MetricsAddress(cfg, lookup)
		Expect(err).To(MatchError(ContainSubstring(`metrics.internalNetwork "underlay": no interface`)))
	})

	It("serves on the interface's first address and the port", func() {
		addr, err := agent.MetricsAddress(parse("shoot-net"), lookup)
		Expect(err).NotTo(HaveOccurred())
		Expect(addr).To(Equal(netip.MustParseAddrPort("10.0.1.1:2112")))

		By("not while the interface has no address")
		cfg := parse("internet")
		addr, err = agent.MetricsAddress(cfg, lookup)
		Expect(err).To(MatchError(`metrics: interface "vrf104009" has no address yet`))
		Expect(addr.IsValid()).To(BeFalse())

		By("not at all without the metrics section")
		cfg.Metrics = nil
		addr, err = agent.MetricsAddress(cfg, lookup)
		Expect(err).NotTo(HaveOccurred())
		Expect(addr.IsValid()).To(BeFalse())
	})

	It("reports the networks' devices, marks the internal one and sums the traffic by side", func() {
		var asked []string
		read := func(names []string) ([]netdev.Stats, error) {
			asked = names
			return []netdev.Stats{
				{Name: "vrf104009", RxBytes: 100, TxBytes: 1000, RxPackets: 1, TxPackets: 10, RxDropped: 7},
				{Name: "vrf3981", RxBytes: 2000, TxBytes: 200, RxPackets: 20, TxPackets: 2, TxErrors: 3},
			}, nil
		}
		devices, err := agent.ReadDevices(parse("shoot-net"), read)
		Expect(err).NotTo(HaveOccurred())
		Expect(asked).To(Equal([]string{"vrf104009", "vrf3981"}))
		Expect(devices).To(Equal([]fwv1alpha1.DeviceStatistics{
			{Name: "vrf104009", RxBytes: 100, TxBytes: 1000, RxPackets: 1, TxPackets: 10, RxDropped: 7},
			{Name: "vrf3981", Internal: true, RxBytes: 2000, TxBytes: 200, RxPackets: 20, TxPackets: 2, TxErrors: 3},
		}))
		Expect(agent.TrafficOf(devices)).To(Equal(&fwv1alpha1.TrafficStatistics{
			Internal: fwv1alpha1.DirectionStatistics{InBytes: 2000, InPackets: 20, OutBytes: 200, OutPackets: 2},
			External: fwv1alpha1.DirectionStatistics{InBytes: 100, InPackets: 1, OutBytes: 1000, OutPackets: 10},
		}))

		By("no sides without an internal device")
		devices[1].Internal = false
		Expect(agent.TrafficOf(devices)).To(BeNil())
	})
})
