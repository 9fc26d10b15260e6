package ruleset_test

import (
	"net/netip"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

var _ = Describe("WithMetricsGuard", func() {
	chain := func(rs *Ruleset, name string) *Chain {
		for _, c := range rs.Chains {
			if c.Name == name {
				return c
			}
		}
		return nil
	}
	ids := func(c *Chain) []string {
		var out []string
		for _, r := range c.Rules {
			out = append(out, r.ID)
		}
		return out
	}
	guard := MetricsGuard{Interface: "vrf3981", Port: 2112}

	It("adds an input chain that lets the loopback and the internal prefixes on the internal interface reach the port, and drops the rest", func() {
		rs, err := Build(nil, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(chain(rs, "input")).To(BeNil(), "no input chain without the metrics")
		out := WithMetricsGuard(rs, guard)
		Expect(chain(rs, "input")).To(BeNil(), "the input is not modified")
		input := chain(out, "input")
		Expect(input).NotTo(BeNil())
		Expect(input.Hook).To(Equal("input"))
		Expect(input.PolicyDrop).To(BeFalse(), "only the metrics port is the agent's business")
		Expect(ids(input)).To(Equal([]string{"metrics-loopback", "metrics-internal-v4", "metrics-internal-v6", "metrics-drop"}))
		for _, r := range input.Rules {
			Expect(r.DPort).To(Equal(uint16(2112)), r.ID)
			Expect(r.L4Proto).To(Equal(uint8(6)), r.ID)
		}
		Expect(input.Rules[1].IIfName).To(Equal("vrf3981"))
		Expect(input.Rules[1].SaddrSet).To(Equal(SetName(SetInternal, false)))
		Expect(input.Rules[3].IIfName).To(BeEmpty(), "dropped on every other interface")
		Expect(Render(out)).To(And(
			ContainSubstring(`iifname "vrf3981" meta l4proto tcp th dport 2112 ip saddr @internal_v4 counter accept`),
			ContainSubstring(`meta l4proto tcp th dport 2112 counter drop`),
		))
	})

	It("shares the DNS redirect's input chain", func() {
		rs, err := Build(nil, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		dns := WithDNSRedirect(rs, DNSRedirect{Upstreams: []netip.Addr{netip.MustParseAddr("10.0.0.10")}, Port: 1053})
		out := WithMetricsGuard(dns, guard)
		n := 0
		for _, c := range out.Chains {
			if c.Name == "input" {
				n++
			}
		}
		Expect(n).To(Equal(1))
		Expect(ids(chain(out, "input"))).To(Equal([]string{"dns-guard-udp", "dns-guard-tcp", "metrics-loopback", "metrics-internal-v4", "metrics-internal-v6", "metrics-drop"}))
		Expect(ids(chain(dns, "input"))).To(Equal([]string{"dns-guard-udp", "dns-guard-tcp"}), "the input is not modified")
	})
})
