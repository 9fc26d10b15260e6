package agent_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
)

var _ = Describe("firewall agent with its ranges spread over many shards", func() {
	// rangeAddr is the address of range item i: 198.18.0.0/16 in steps of 4.
	rangeAddr := func(base, i int) string { return fmt.Sprintf("198.%d.%d.%d", base, (4*i)>>8, (4*i)&255) }
	// rangeItems allows n /31s from 198.<base>.0.0 on 1000 + i%50.
	rangeItems := func(base, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "      - to: [{cidr: %s/31}]\n        ports: [{protocol: TCP, port: %d}]\n", rangeAddr(base, i), 1000+i%50)
		}
		return b.String()
	}

	It("jumps to the one shard a packet's address can match, and keeps the counters across a new layout", func() {
		t := newTopology()
		// The outside answers on three addresses of the ranges, the first,
		// a middle and the last item's, behind the firewall's ext0.
		first, middle, last := rangeAddr(18, 0), rangeAddr(18, 1500), rangeAddr(18, 2999)
		for _, a := range []string{first, middle, last} {
			Expect(t.outside.IP("addr", "add", a+"/32", "dev", "eth0")).To(Succeed())
		}
		Expect(t.fw.IP("route", "add", "198.18.0.0/15", "via", outsideV4)).To(Succeed())
		for _, port := range []int{1000, 1001, 1049, 8080, 9090} {
			serve(t.outside, "::", port)
		}
		serve(t.node, "::", 30081)

		// 3,000 ranges, and the whole /16 on 9090, which crosses every
		// bound between shards. Ingress: the first 2,000 ranges may reach
		// the node on 30081.
		var ingress strings.Builder
		for i := range 2000 {
			fmt.Fprintf(&ingress, "      - from: [{cidr: %s/31}]\n        ports: [{protocol: TCP, port: 30081}]\n", rangeAddr(18, i))
		}
		config := func(egress string) string {
			return strings.Replace(configYAML(egress+"      - to: [{cidr: 198.18.0.0/16}]\n        ports: [{protocol: TCP, port: 9090}]\n", ""),
				"      ingress:\n", "      ingress:\n"+ingress.String(), 1)
		}
		cfgPath := filepath.Join(GinkgoT().TempDir(), "config.yaml")
		// IPv6: 2,000 /127s after the outside host's address, and its own
		// /127 on 1001.
		var v6 strings.Builder
		v6.WriteString("      - to: [{cidr: \"2001:db8:1::2/127\"}]\n        ports: [{protocol: TCP, port: 1001}]\n")
		for i := range 2000 {
			fmt.Fprintf(&v6, "      - to: [{cidr: \"2001:db8:1::%x/127\"}]\n        ports: [{protocol: TCP, port: %d}]\n", 0x1000+4*i, 1000+i%50)
		}
		writeConfig(cfgPath, config(rangeItems(18, 3000)+v6.String()))
		prog := nftables.NewProgrammer(t.fw.Path())
		a := &agent.Agent{ConfigPath: cfgPath, Applier: prog, Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil))}
		res, err := a.ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Full))
		shards := func(m string) int {
			out, err := t.fw.Exec("nft", "list", "map", "inet", ruleset.TableName, m)
			Expect(err).NotTo(HaveOccurred())
			return strings.Count(out, ": jump ")
		}
		Expect(shards("egress_v4_shards")).To(BeNumerically(">=", 3000/ruleset.ShardTarget))
		Expect(shards("ingress_v4_shards")).To(BeNumerically(">=", 2000/ruleset.ShardTarget))
		Expect(shards("egress_v6_shards")).To(BeNumerically(">=", 2000/ruleset.ShardTarget))

		By("egress: each address reaches its shard, on its own port only")
		expectAllowed(t.node, first, 1000)
		expectAllowed(t.node, middle, 1000)
		expectAllowed(t.node, last, 1049)
		expectDropped(t.node, middle, 1001)
		expectDropped(t.node, last, 1000)
		By("egress: a range across all shards is in the span set")
		expectAllowed(t.node, middle, 9090)
		expectAllowed(t.node, last, 9090)

		By("IPv6 alike")
		expectAllowed(t.node, outsideV6, 1001)
		expectDropped(t.node, outsideV6, 1000)
		expectAllowed(t.node, outsideV6, 8080) // the /64 of the config: the span set

		By("ingress: sources are looked up in their shard")
		expectAllowedFrom(t.outside, first, nodeV4, 30081)
		expectAllowedFrom(t.outside, middle, nodeV4, 30081)
		expectDroppedFrom(t.outside, last, nodeV4, 30081)

		counters, err := prog.RuleCounters(ruleset.TableName)
		Expect(err).NotTo(HaveOccurred())
		Expect(counters["egress-v4"].Packets).To(BeNumerically(">=", 5), "the shards' and the span's rules count as one")
		Expect(counters["ingress-v4"].Packets).To(BeNumerically(">=", 2))

		By("3,000 more ranges: the last shard overflows, a new layout replaces the table")
		writeConfig(cfgPath, config(rangeItems(18, 3000)+rangeItems(19, 3000)+v6.String()))
		res, err = a.ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Mode).To(Equal(nftables.Full))
		Expect(shards("egress_v4_shards")).To(BeNumerically(">=", 6000/ruleset.ShardTarget))
		after, err := prog.RuleCounters(ruleset.TableName)
		Expect(err).NotTo(HaveOccurred())
		Expect(after["egress-v4"]).To(Equal(counters["egress-v4"]), "counters go on across the new layout")
		expectAllowed(t.node, last, 1049)
		expectDropped(t.node, last, 1000)

		By("one range less: only elements change")
		writeConfig(cfgPath, config(rangeItems(18, 2999)+rangeItems(19, 3000)+v6.String()))
		res, err = a.ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(And(HaveField("Mode", nftables.Elements), HaveField("Deleted", 1), HaveField("Added", 0)))
		expectDropped(t.node, last, 1049)
		expectAllowed(t.node, middle, 1000)
	})
})

// dialFrom dials from the source address src in ns.
func dialFrom(ns *netns.NS, src, addr string, port int, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := ns.Do(func() error {
		d := net.Dialer{Timeout: timeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		var err error
		c, err = d.Dial("tcp", net.JoinHostPort(addr, fmt.Sprint(port)))
		return err
	})
	if err == nil {
		DeferCleanup(c.Close)
	}
	return c, err
}

// expectAllowedFrom checks that a connection from src gets through.
func expectAllowedFrom(ns *netns.NS, src, addr string, port int) {
	_, err := dialFrom(ns, src, addr, port, allowedWithin)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "connecting from %s to [%s]:%d", src, addr, port)
}

// expectDroppedFrom checks that a connection attempt from src times out.
func expectDroppedFrom(ns *netns.NS, src, addr string, port int) {
	_, err := dialFrom(ns, src, addr, port, time.Second)
	var ne net.Error
	ExpectWithOffset(1, err != nil && errors.As(err, &ne) && ne.Timeout()).To(BeTrue(), "connecting from %s to [%s]:%d must time out, got %v", src, addr, port, err)
}
