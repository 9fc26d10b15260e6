package agent_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset/rulesettest"
)

// The throughput table runs with BENCH_TABLE=true (make bench): iperf3 from
// the node through the firewall to the outside host, with no ruleset, and
// with the agent's ruleset holding 10 and 20,000 policy items, and with the
// 20,000 items as one rule each, metal-stack firewall-controller's shape.
var _ = Describe("forward throughput", Label("bench"), func() {
	It("prints iperf3 figures", func() {
		if os.Getenv("BENCH_TABLE") != "true" {
			Skip("set BENCH_TABLE=true (make bench)")
		}
		_, err := exec.LookPath("iperf3")
		Expect(err).NotTo(HaveOccurred())
		t := newTopology()
		server := exec.Command("ip", "netns", "exec", t.outside.Name, "iperf3", "-s", "-p", "5201")
		Expect(server.Start()).To(Succeed())
		DeferCleanup(func() {
			_ = server.Process.Kill()
			_ = server.Wait()
		})
		time.Sleep(500 * time.Millisecond)
		serve(t.outside, "::", 5202)

		prog := nftables.NewProgrammer(t.fw.Path())
		fw := &fwv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.1.0/24", "fd00:1::/64"}}
		rows := [][]string{{"ruleset", "TCP throughput node -> outside (iperf3, 3 s)", "new connections/s (200 x dial)", "new UDP flow through every rule (20,000 datagrams)"}}
		for _, c := range []struct {
			name     string
			spec     *fwv1alpha1.PolicySpec
			baseline bool
		}{
			{"none (forwarding only)", nil, false},
			{"agent, 10 policy items", items(10), false},
			{"agent, 20000 policy items", items(20000), false},
			{"agent, 20000 wide items, matched in one of their shards", wideItems(20000), false},
			{"baseline: 20000 policy items as one rule each (nft -f)", items(20000), true},
		} {
			name := c.name
			var rs *ruleset.Ruleset
			if c.baseline {
				_, err := t.fw.Exec("nft", "delete", "table", "inet", ruleset.TableName)
				Expect(err).NotTo(HaveOccurred())
				file := filepath.Join(GinkgoT().TempDir(), "baseline.nft")
				Expect(os.WriteFile(file, []byte(rulesettest.Baseline(c.spec)), 0o600)).To(Succeed())
				_, err = t.fw.Exec("nft", "-f", file)
				Expect(err).NotTo(HaveOccurred())
			} else if c.spec != nil {
				rs, err = ruleset.Build(fw, []*fwv1alpha1.PolicySpec{c.spec}, nil)
				Expect(err).NotTo(HaveOccurred())
				_, err = prog.Apply(rs)
				Expect(err).NotTo(HaveOccurred())
			}
			out, err := t.node.Exec("iperf3", "-c", outsideV4, "-p", "5201", "-t", "3", "-J")
			Expect(err).NotTo(HaveOccurred())
			var res struct {
				End struct {
					SumReceived struct {
						BitsPerSecond float64 `json:"bits_per_second"`
					} `json:"sum_received"`
				} `json:"end"`
			}
			Expect(json.Unmarshal([]byte(out), &res)).To(Succeed())

			before, err := prog.RuleCounters(ruleset.TableName)
			Expect(err).NotTo(HaveOccurred())
			start := time.Now()
			for range 200 {
				var c net.Conn
				Expect(t.node.Do(func() error {
					var err error
					c, err = net.DialTimeout("tcp", net.JoinHostPort(outsideV4, "5202"), 2*time.Second)
					return err
				})).To(Succeed())
				_ = c.Close()
			}
			perSec := 200 / time.Since(start).Seconds()
			if rs != nil && len(rs.Set(ruleset.DispatchName(ruleset.SetEgress, false)).Elements) > 1 {
				after, err := prog.RuleCounters(ruleset.TableName)
				Expect(err).NotTo(HaveOccurred())
				Expect(after["egress-v4"].Packets-before["egress-v4"].Packets).To(BeNumerically(">=", 200), "the connections went through a shard")
				Expect(after["egress-exact-v4"]).To(Equal(before["egress-exact-v4"]))
			}
			rows = append(rows, []string{name, fmt.Sprintf("%.2f Gbit/s", res.End.SumReceived.BitsPerSecond/1e9), fmt.Sprintf("%.0f", perSec),
				fmt.Sprintf("%.1f µs", float64(newFlowCost(t).Nanoseconds())/1000)})
		}
		fmt.Printf("\nforward throughput through the firewall namespace (veth, this machine)\n\n")
		for i, r := range rows {
			fmt.Printf("| %s |\n", strings.Join(r, " | "))
			if i == 0 {
				fmt.Println("|---|---:|---:|---:|")
			}
		}
		fmt.Println()
	})
})

// newFlowCost sends 20,000 UDP datagrams from the node to the outside host,
// each to another port: each is a new flow, which no item allows, so it is
// looked up in every set of the forward chain (the hash set, the map and one
// shard, the span set, ...) before it is dropped; without a ruleset it is
// forwarded. The kernel does that work within the send on a veth, so the time
// per send is the cost of a new flow.
func newFlowCost(t *topology) time.Duration {
	var d time.Duration
	Expect(t.node.Do(func() error {
		c, err := net.ListenUDP("udp4", nil)
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		to, payload := &net.UDPAddr{IP: net.ParseIP(outsideV4)}, []byte("new flow")
		start := time.Now()
		for i := range 20000 {
			to.Port = 10000 + i
			if _, err := c.WriteToUDP(payload, to); err != nil {
				return err
			}
		}
		d = time.Since(start) / 20000
		return nil
	})).To(Succeed())
	return d
}

// items returns n egress items, one /32 and one port each; item 0 allows
// iperf3 (5201) and item 1 the dial test (5202) to the outside host.
func items(n int) *fwv1alpha1.PolicySpec {
	spec := &fwv1alpha1.PolicySpec{}
	for i := range n {
		cidr := outsideV4 + "/32"
		port := int32(5201 + i)
		if i > 1 {
			u := uint32(100<<24|64<<16) + uint32(4*i)
			cidr = netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}).String() + "/32"
			port = int32(1000 + i%5000)
		}
		spec.Egress = append(spec.Egress, fwv1alpha1.EgressRule{
			To: []fwv1alpha1.IPBlock{{CIDR: cidr}}, Ports: []fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To(port)}},
		})
	}
	return spec
}

// wideItems returns n egress items of a /31 next to the outside host's
// address (in steps of 4 from 203.0.0.0) on two ports each, and the outside
// host's /31 on 5201-5202: a range, so the connections are matched in the
// shard of the ranges around it (some 400 of them), after the map's jump.
func wideItems(n int) *fwv1alpha1.PolicySpec {
	spec := &fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{
		To:    []fwv1alpha1.IPBlock{{CIDR: outsideV4 + "/31"}},
		Ports: []fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To(int32(5201)), EndPort: ptr.To(int32(5202))}},
	}}}
	for i := range n {
		a := netip.AddrFrom4([4]byte{203, byte(4 * i >> 16), byte(4 * i >> 8), byte(4 * i)})
		spec.Egress = append(spec.Egress, fwv1alpha1.EgressRule{
			To:    []fwv1alpha1.IPBlock{{CIDR: a.String() + "/31"}},
			Ports: []fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To(int32(1000 + i%5000))}, {Protocol: "TCP", Port: ptr.To(int32(443))}},
		})
	}
	return spec
}
