package nftables_test

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/metal-stack/metal-go/api/models"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalimage"
)

// A firewall as metal-stack's installer leaves it: the image's table inet
// metal (forward policy drop) and inet nat (masquerade at priority 0) in
// front of the node network "vrf3981" and the internet "vlan104009", the
// names the kernel gives a packet's way in and out there. Real packets.
var _ = Describe("the agent's table beside the image's own", Ordered, func() {
	var (
		client, fw, server *netns.NS
		p                  *nftables.Programmer
		rs                 *ruleset.Ruleset
	)
	const allowed, other, echoAddr = "203.0.113.10:7000", "203.0.113.10:7001", "203.0.113.10:7002"

	imageRules := func() string {
		GinkgoHelper()
		a := &metalimage.Allocation{Hostname: "fw", Networks: []metalimage.Network{
			{ID: "private", VRF: 3981, Private: true, Prefixes: []string{"10.0.16.0/22"}, IPs: []string{"10.0.16.1"}},
			{ID: "internet", VRF: 104009, NAT: true, Prefixes: []string{"203.0.113.0/24"}, IPs: []string{"203.0.113.1"}, DestinationPrefixes: []string{"0.0.0.0/0"}},
		}, FirewallRules: &models.V1FirewallRules{Egress: []*models.V1FirewallEgressRule{{Protocol: "TCP", Ports: []int32{443}, To: []string{"198.51.100.0/24"}, Comment: "allow apt"}}}}
		rules, err := metalimage.NftablesRules(a)
		Expect(err).NotTo(HaveOccurred())
		path := filepath.Join(GinkgoT().TempDir(), "rules")
		Expect(os.WriteFile(path, []byte("flush ruleset\n"+rules), 0o600)).To(Succeed())
		return path
	}
	// load is what nftables.service does at boot and on every reload.
	load := func(path string) {
		GinkgoHelper()
		_, err := fw.Exec("nft", "-f", path)
		Expect(err).NotTo(HaveOccurred())
	}
	// connect dials from the node and says what the server saw as the source.
	var seen chan string
	connect := func(addr string) (string, error) {
		var c net.Conn
		err := client.Do(func() (err error) {
			c, err = (&net.Dialer{Timeout: 700 * time.Millisecond}).Dial("tcp", addr)
			return err
		})
		if err != nil {
			return "", err
		}
		defer func() { _ = c.Close() }()
		select {
		case src := <-seen:
			return src, nil
		case <-time.After(5 * time.Second):
			return "", errors.New("the server saw no connection")
		}
	}

	BeforeAll(func() {
		client, fw, server = newNS("fwa-img-c"), newNS("fwa-img-f"), newNS("fwa-img-s")
		Expect(netns.Veth(client, "eth0", "10.0.16.10/22", fw, "vrf3981", "10.0.16.1/22")).To(Succeed())
		Expect(netns.Veth(fw, "vlan104009", "203.0.113.1/24", server, "eth0", "203.0.113.10/24")).To(Succeed())
		Expect(fw.IP("addr", "add", "203.0.113.200/32", "dev", "vlan104009")).To(Succeed())
		Expect(client.IP("route", "add", "default", "via", "10.0.16.1")).To(Succeed())
		Expect(fw.EnableForwarding()).To(Succeed())
		seen = make(chan string, 16)
		for _, addr := range []string{allowed, other} {
			var l net.Listener
			Expect(server.Do(func() (err error) { l, err = net.Listen("tcp", addr); return err })).To(Succeed())
			DeferCleanup(l.Close)
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
					seen <- host
					_ = c.Close()
				}
			}()
		}
		var el net.Listener
		Expect(server.Do(func() (err error) { el, err = net.Listen("tcp", echoAddr); return err })).To(Succeed())
		DeferCleanup(el.Close)
		go func() {
			for {
				c, err := el.Accept()
				if err != nil {
					return
				}
				go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
			}
		}()
		p = nftables.NewProgrammer(fw.Path())
		var err error
		rs, err = ruleset.Build(&fwv1alpha1.FirewallTrafficSpec{
			InternalPrefixes: []string{"10.0.16.0/22"},
			EgressRules:      []fwv1alpha1.EgressRuleSNAT{{Interface: "vlan104009", IPs: []string{"203.0.113.200"}}},
		}, []*fwv1alpha1.PolicySpec{{Egress: []fwv1alpha1.EgressRule{{
			To: []fwv1alpha1.IPBlock{{CIDR: "203.0.113.10/32"}}, Ports: []fwv1alpha1.PolicyPort{{Port: ptr.To[int32](7000)}, {Port: ptr.To[int32](7002)}},
		}}}}, nil)
		Expect(err).NotTo(HaveOccurred())
		rs = ruleset.WithDNSRedirect(rs, ruleset.DNSRedirect{Port: 10053})
		rs = ruleset.WithMetricsGuard(rs, ruleset.MetricsGuard{Interface: "vrf3981", Port: 2112})
	})

	It("is dropped by the image's table until the agent opens it, then decides alone, and its SNAT comes before the image's masquerade", func() {
		rules := imageRules()
		load(rules)
		_, err := p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		_, err = connect(allowed)
		Expect(err).To(HaveOccurred(), "the agent accepts it, the image's forward chain (policy drop) does not")

		changed, err := p.OpenImageTable(rs.Openings)
		Expect(err).NotTo(HaveOccurred())
		Expect(changed).To(BeTrue())
		Expect(connect(allowed)).To(Equal("203.0.113.200"), "allowed by the agent, with the agent's SNAT address, not the image's masquerade")
		_, err = connect(other)
		Expect(err).To(HaveOccurred(), "what the agent does not allow stays dropped")

		forward := list(fw, "chain", "inet", "metal", "forward")
		Expect(forward).To(And(ContainSubstring("policy accept;"), ContainSubstring(`"allow apt"`)))
		Expect(forward).NotTo(ContainSubstring(metalimage.NftablesDropLogPrefix), "nothing is logged as dropped that is not")
		Expect(list(fw, "chain", "inet", "metal", "input")).To(MatchRegexp(
			`(?s)policy drop;\s+udp dport 10053 ct status dnat counter .*accept comment "firewall-agent: dns-proxy-udp .*` +
				`tcp dport 10053 ct status dnat .*accept comment "firewall-agent: dns-proxy-tcp .*` +
				`iifname "vrf3981" tcp dport 2112 counter .*accept comment "firewall-agent: metrics .*icmpv6 input`))
		Expect(p.OpenImageTable(rs.Openings)).To(BeFalse(), "nothing to change a second time")

		By("a reload of nftables.service brings the image's drop back from disk; the agent opens it again")
		load(rules)
		_, err = connect(allowed)
		Expect(err).To(HaveOccurred())
		_, err = p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.OpenImageTable(rs.Openings)).To(BeTrue())
		Expect(connect(allowed)).To(Equal("203.0.113.200"))

		By("openings no longer wanted are removed, the others stay")
		Expect(p.OpenImageTable(rs.Openings[2:])).To(BeTrue())
		input := list(fw, "chain", "inet", "metal", "input")
		Expect(input).NotTo(ContainSubstring("dns-proxy"))
		Expect(input).To(ContainSubstring(`firewall-agent: metrics`))
	})

	It("keeps established connections through a reload that loads the closed table with the image's rules", func() {
		// As the image's /etc/nftables.conf includes /etc/nftables/*, where
		// the userdata puts the closed table.
		rulesAndClosed := imageRules()
		closed, err := os.ReadFile(rulesAndClosed)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(rulesAndClosed, append(closed, ruleset.Render(ruleset.Closed())...), 0o600)).To(Succeed())
		load(rulesAndClosed)
		_, err = p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		_, err = p.OpenImageTable(rs.Openings)
		Expect(err).NotTo(HaveOccurred())
		var kept net.Conn
		Expect(client.Do(func() (err error) {
			kept, err = (&net.Dialer{Timeout: 700 * time.Millisecond}).Dial("tcp", echoAddr)
			return err
		})).To(Succeed())
		defer func() { _ = kept.Close() }()
		echo := func(msg string) error {
			Expect(kept.SetDeadline(time.Now().Add(2 * time.Second))).To(Succeed())
			if _, err := kept.Write([]byte(msg)); err != nil {
				return err
			}
			buf := make([]byte, len(msg))
			_, err := io.ReadFull(kept, buf)
			return err
		}
		Expect(echo("before")).To(Succeed())

		By("the reload: the agent's table is replaced by the closed one")
		load(rulesAndClosed)
		Expect(list(fw, "table", "inet", ruleset.TableName)).To(ContainSubstring("chain " + ruleset.ClosedChain))
		Expect(echo("during")).To(Succeed(), "an established connection passes the closed table")
		_, err = connect(allowed)
		Expect(err).To(HaveOccurred(), "a new one does not")

		By("the boot step puts the agent's ruleset back")
		_, err = p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.OpenImageTable(rs.Openings)).To(BeTrue())
		Expect(echo("after")).To(Succeed())
		Expect(connect(allowed)).To(Equal("203.0.113.200"))
	})

	It("does nothing where the image's table is not", func() {
		_, err := fw.Exec("nft", "flush", "ruleset")
		Expect(err).NotTo(HaveOccurred())
		Expect(p.OpenImageTable(rs.Openings)).To(BeFalse())
	})
})
