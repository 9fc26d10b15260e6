package agent_test

import (
	"bufio"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/snataddr"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
)

// snatConfig SNATs egress through ext0 to ips and allows port 8080 outside.
func snatConfig(iface string, ips ...string) string {
	return fmt.Sprintf(`name: fw-snat
sources:
  static:
    firewall:
      internalPrefixes: ["10.0.1.0/24", "fd00:1::/64"]
      egressRules: [{interface: %s, ips: [%s]}]
    cwnp:
      egress:
      - to: [{cidr: 203.0.113.0/24}, {cidr: "2001:db8:1::/64"}]
        ports: [{protocol: TCP, port: 8080}]
controllers:
  firewall: {source: static}
  cwnp:     {source: static}
`, iface, strings.Join(ips, ", "))
}

// exchange connects, returns the source address the server saw, and checks
// that data goes both ways on the connection.
func exchange(ns *netns.NS, addr string, port int) string {
	c, err := dial(ns, addr, port, 2*time.Second)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "connecting to [%s]:%d", addr, port)
	ExpectWithOffset(1, c.SetDeadline(time.Now().Add(3*time.Second))).To(Succeed())
	r := bufio.NewReader(c)
	seen, err := r.ReadString('\n')
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	_, err = fmt.Fprintln(c, "ping")
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	echo, err := r.ReadString('\n')
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, echo).To(Equal("ping\n"))
	return strings.TrimSpace(seen)
}

// addrsOf lists ext0's addresses in the firewall's namespace, one
// "inet|inet6 address/bits " a line, without flags (DAD's "tentative" on the
// link-local address comes and goes by itself).
func addrsOf(t *topology) string {
	out, err := t.fw.Exec("ip", "-o", "addr", "show", "dev", "ext0")
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) >= 4 {
			fmt.Fprintf(&b, "%s %s \n", f[2], f[3])
		}
	}
	return b.String()
}

var _ = Describe("firewall agent SNAT addresses", func() {
	const (
		snatV4, snatV6 = "203.0.113.50", "2001:db8:1::50"
		// operatorV4 is on ext0 before the agent starts: never the agent's to remove.
		operatorV4 = "203.0.113.60"
	)
	var (
		t       *topology
		cfgPath string
		newAg   func(keeper agent.AddressKeeper) *agent.Agent
		keeper  *snataddr.Manager
	)
	BeforeEach(func() {
		t = newTopology()
		serve(t.outside, "::", 8080)
		Expect(t.fw.IP("addr", "add", operatorV4+"/24", "dev", "ext0")).To(Succeed())
		dir := GinkgoT().TempDir()
		cfgPath = filepath.Join(dir, "config.yaml")
		keeper = &snataddr.Manager{NSPath: t.fw.Path(), RecordPath: filepath.Join(dir, "snat.json")}
		newAg = func(k agent.AddressKeeper) *agent.Agent {
			return &agent.Agent{ConfigPath: cfgPath, Applier: nftables.NewProgrammer(t.fw.Path()), Addresses: k,
				Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil))}
		}
	})

	It("adds a SNAT address that was not configured, carries connections through it both ways, and removes only it", func() {
		By("getting no reply on a SNAT address that is not on the machine: the rule alone is not enough")
		writeConfig(cfgPath, snatConfig("ext0", snatV4))
		_, err := newAg(nil).ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		expectDropped(t.node, outsideV4, 8080)

		By("carrying a TCP connection and its replies once the agent puts the address on ext0")
		a := newAg(keeper)
		_, err = a.ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		Expect(addrsOf(t)).To(ContainSubstring("inet " + snatV4 + "/32 "))
		Expect(exchange(t.node, outsideV4, 8080)).To(Equal(snatV4))

		By("IPv6 too, usable at once (no duplicate address detection)")
		writeConfig(cfgPath, snatConfig("ext0", snatV4, `"`+snatV6+`"`))
		_, err = a.ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		Expect(addrsOf(t)).To(ContainSubstring("inet6 " + snatV6 + "/128 "))
		Expect(exchange(t.node, outsideV6, 8080)).To(Equal(snatV6))

		By("adding nothing twice: applying again changes no address")
		before := addrsOf(t)
		_, err = a.ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		Expect(addrsOf(t)).To(Equal(before))
		Expect(keeper.Added()).To(HaveLen(2))

		By("removing the agent's addresses with the rule, keeping the operator's one it SNATs to now")
		writeConfig(cfgPath, snatConfig("ext0", operatorV4))
		_, err = a.ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		Expect(addrsOf(t)).NotTo(ContainSubstring(snatV4 + "/"))
		Expect(addrsOf(t)).NotTo(ContainSubstring(snatV6 + "/"))
		Expect(exchange(t.node, outsideV4, 8080)).To(Equal(operatorV4))
		Expect(keeper.Added()).To(BeEmpty(), "the operator's address was there first: not the agent's")

		writeConfig(cfgPath, snatConfig("ext0", snatV4))
		_, err = a.ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		Expect(addrsOf(t)).To(And(ContainSubstring(snatV4+"/32"), ContainSubstring(operatorV4+"/24")))
		By("a restarted agent, knowing only its record, still removes its own address and not the operator's")
		writeConfig(cfgPath, snatConfig("ext0", fwExtV4))
		_, err = newAg(&snataddr.Manager{NSPath: keeper.NSPath, RecordPath: keeper.RecordPath}).ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		Expect(addrsOf(t)).NotTo(ContainSubstring(snatV4 + "/"))
		Expect(addrsOf(t)).To(And(ContainSubstring(operatorV4+"/24"), ContainSubstring(fwExtV4+"/24")))
	})

	It("refuses an interface that does not exist or an address no interface may hold, changing neither rules nor addresses", func() {
		writeConfig(cfgPath, snatConfig("ext0", snatV4))
		a := newAg(keeper)
		_, err := a.ApplyOnce()
		Expect(err).NotTo(HaveOccurred())
		rules, err := t.fw.Exec("nft", "list", "table", "inet", "firewall-agent")
		Expect(err).NotTo(HaveOccurred())
		addrs := addrsOf(t)

		for _, c := range []struct{ config, message string }{
			{snatConfig("nope0", "203.0.113.51"), `SNAT address 203.0.113.51: interface "nope0": Link not found`},
			{snatConfig("ext0", "127.0.0.5"), `address "127.0.0.5": not a unicast address an interface may hold`},
			{snatConfig("ext0", "224.0.0.5"), `address "224.0.0.5": not a unicast address an interface may hold`},
		} {
			writeConfig(cfgPath, c.config)
			_, err := a.ApplyOnce()
			Expect(err).To(MatchError(ContainSubstring(c.message)))
			Expect(t.fw.Exec("nft", "list", "table", "inet", "firewall-agent")).To(Equal(rules), "rules unchanged")
			Expect(addrsOf(t)).To(Equal(addrs), "addresses unchanged")
		}
		Expect(exchange(t.node, outsideV4, 8080)).To(Equal(snatV4))
	})
})
