package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
)

// The outside host's resolvers and the servers the names point to.
const (
	resolverV4, resolverV6 = "203.0.113.53", "2001:db8:1::53"
	// servicePort is where the outside host serves on each address.
	servicePort = 8443
)

// dnsmasq runs a real resolver from Debian in ns on the resolver addresses,
// authoritative for what the flags say (e.g. --host-record=name,addr[,ttl]),
// until the spec ends.
func dnsmasq(ns *netns.NS, records ...string) {
	GinkgoHelper()
	dnsmasqOn(ns, []string{resolverV4, resolverV6}, records...)
}

// dnsmasqOn runs dnsmasq in ns listening on the given addresses.
func dnsmasqOn(ns *netns.NS, listen []string, records ...string) *exec.Cmd {
	GinkgoHelper()
	path, err := exec.LookPath("dnsmasq")
	if err != nil {
		path, err = exec.LookPath("/usr/sbin/dnsmasq") // not on a user's PATH
	}
	Expect(err).NotTo(HaveOccurred(), "the DNS tests need dnsmasq (Debian package dnsmasq-base; hack/test-prereqs.sh installs it)")
	args := append([]string{"netns", "exec", ns.Name, path, "--keep-in-foreground", "--no-resolv", "--no-hosts", "--bind-interfaces",
		"--listen-address=" + strings.Join(listen, ","), "--port=53", "--local-ttl=300", "--log-facility=-", "--pid-file=",
		"--user=root", "--group=root"}, records...)
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	Eventually(func() error {
		return ns.Do(func() error {
			_, _, err := (&dns.Client{Timeout: time.Second}).Exchange(new(dns.Msg).SetQuestion("ready.invalid.", dns.TypeA), net.JoinHostPort(listen[0], "53"))
			return err
		})
	}, 5*time.Second, 50*time.Millisecond).Should(Succeed(), "dnsmasq answers")
	return cmd
}

// lookup asks server:53 from ns and returns the addresses of the answer.
func lookup(ns *netns.NS, server, transport, name string, qtype uint16) ([]string, error) {
	var resp *dns.Msg
	err := ns.Do(func() error {
		c := &dns.Client{Net: transport, Timeout: 5 * time.Second}
		q := new(dns.Msg).SetQuestion(name, qtype)
		var err error
		resp, _, err = c.Exchange(q, net.JoinHostPort(server, "53"))
		return err
	})
	if err != nil {
		return nil, err
	}
	if resp.Rcode != dns.RcodeSuccess {
		return nil, fmt.Errorf("rcode %s", dns.RcodeToString[resp.Rcode])
	}
	var out []string
	for _, rr := range resp.Answer {
		switch r := rr.(type) {
		case *dns.A:
			out = append(out, r.A.String())
		case *dns.AAAA:
			out = append(out, r.AAAA.String())
		}
	}
	return out, nil
}

// expectFirstSYN connects with a timeout below the kernel's first SYN
// retransmission (1s): only a connection whose first SYN passed succeeds.
func expectFirstSYN(ns *netns.NS, addr string) {
	GinkgoHelper()
	c, err := dial(ns, addr, servicePort, 700*time.Millisecond)
	Expect(err).NotTo(HaveOccurred(), "the first SYN to %s must pass", addr)
	_ = c.SetDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 64)
	_, err = c.Read(buf)
	Expect(err).NotTo(HaveOccurred())
}

// agentProcess runs the built agent in the firewall's namespace.
type agentProcess struct {
	cmd  *exec.Cmd
	out  *gbytes.Buffer
	done chan struct{}
}

// startAgentProcess runs the agent with env added to the test's environment.
func startAgentProcess(fw *netns.NS, cfgPath string, env ...string) *agentProcess {
	GinkgoHelper()
	p := &agentProcess{out: gbytes.NewBuffer(), done: make(chan struct{})}
	p.cmd = exec.Command("ip", "netns", "exec", fw.Name, binary, "--last-good-ruleset", lastGoodPath(), "--config", cfgPath, "--poll-interval", "100ms", "--seed-interval", "500ms",
		"--metrics-bind-address", "0")
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	Expect(p.cmd.Start()).To(Succeed())
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	DeferCleanup(p.stop)
	Eventually(p.out, 20*time.Second).Should(gbytes.Say("ruleset applied"))
	return p
}

func (p *agentProcess) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	GinkgoWriter.Printf("agent output:\n%s\n", p.out.Contents())
}

const dnsAgentConfig = `name: fw-dns
sources:
  static:
    firewall: {internalPrefixes: ["10.0.1.0/24", "fd00:1::/64"]}
    cwnp:
      egress:
      - toFQDNs: [{matchName: allowed.example.com}, {matchPattern: "*.wild.example.com"}, {matchName: target.example.org}, {matchName: short.example.com}]
        ports: [{port: %d}]
controllers:
  firewall: {source: static}
  cwnp: {source: static}
dns: {upstreams: [%s], port: 10053, minTTL: 0s, grace: 1s, maxAddressesPerName: 16}
`

var _ = Describe("toFQDNs through the DNS proxy, with a real resolver", func() {
	var (
		t       *topology
		cfgPath string
	)
	// Addresses of the outside host, each serving on servicePort.
	addrs := map[string]string{
		"allowed": "203.0.113.10", "allowed6": "2001:db8:1::10", "denied": "203.0.113.11", "wild": "203.0.113.12",
		"deep": "203.0.113.13", "target": "203.0.113.14", "short": "203.0.113.15", "unresolved": "203.0.113.16", "apex": "203.0.113.17",
		"other": "203.0.113.18",
	}

	BeforeEach(func() {
		t = newTopology()
		for _, a := range append(mapValues(addrs), resolverV4, resolverV6) {
			family, prefix := "-4", "/24"
			if strings.Contains(a, ":") {
				family, prefix = "-6", "/64"
			}
			Expect(t.outside.IP(family, "addr", "add", a+prefix, "dev", "eth0", "nodad")).To(Succeed())
		}
		serve(t.outside, "::", servicePort)
		cfgPath = filepath.Join(GinkgoT().TempDir(), "config.yaml")
		writeConfig(cfgPath, fmt.Sprintf(dnsAgentConfig, servicePort, resolverV4+`, "`+resolverV6+`"`))
		dnsmasq(t.outside,
			"--host-record=allowed.example.com,"+addrs["allowed"]+","+addrs["allowed6"],
			"--host-record=denied.example.com,"+addrs["denied"],
			"--host-record=x.wild.example.com,"+addrs["wild"],
			"--host-record=deep.y.wild.example.com,"+addrs["deep"],
			"--host-record=wild.example.com,"+addrs["apex"],
			"--host-record=target.example.org,"+addrs["target"],
			"--cname=alias.example.net,target.example.org",
			"--host-record=short.example.com,"+addrs["short"]+",1",
			"--host-record=other.example.com,"+addrs["other"],
			"--host-record=also.wild.example.com,"+addrs["allowed"],
		)
	})

	It("opens an allowed name at once, and nothing else", func() {
		startAgentProcess(t.fw, cfgPath)

		By("an allowed name: the first SYN after the answer passes")
		Expect(lookup(t.node, resolverV4, "udp", "allowed.example.com.", dns.TypeA)).To(Equal([]string{addrs["allowed"]}))
		expectFirstSYN(t.node, addrs["allowed"])

		By("a name no policy allows resolves, but its address is dropped")
		Expect(lookup(t.node, resolverV4, "udp", "denied.example.com.", dns.TypeA)).To(Equal([]string{addrs["denied"]}))
		expectDropped(t.node, addrs["denied"], servicePort)
		Expect(fqdnSet(t.fw, fwv1alpha1.FQDNSelector{MatchName: "allowed.example.com"}, false)).To(Equal([]string{addrs["allowed"]}))

		By("an address the allowed name never resolved to is dropped, whatever the Host header says")
		err := t.node.Do(func() error {
			client := &httpClientInNS{timeout: time.Second}
			return client.get("http://"+net.JoinHostPort(addrs["unresolved"], fmt.Sprint(servicePort))+"/", "allowed.example.com")
		})
		Expect(err).To(MatchError(ContainSubstring("timeout")))

		By("a wildcard: any name under it, over labels, not the name itself")
		Expect(lookup(t.node, resolverV4, "tcp", "x.wild.example.com.", dns.TypeA)).To(Equal([]string{addrs["wild"]}))
		expectFirstSYN(t.node, addrs["wild"])
		Expect(lookup(t.node, resolverV4, "udp", "deep.y.wild.example.com.", dns.TypeA)).To(Equal([]string{addrs["deep"]}))
		expectFirstSYN(t.node, addrs["deep"])
		Expect(lookup(t.node, resolverV4, "udp", "wild.example.com.", dns.TypeA)).To(Equal([]string{addrs["apex"]}))
		expectDropped(t.node, addrs["apex"], servicePort)
		Expect(fqdnSet(t.fw, fwv1alpha1.FQDNSelector{MatchPattern: "*.wild.example.com"}, false)).To(ConsistOf(addrs["wild"], addrs["deep"]))

		By("a CNAME chain to an allowed target")
		Expect(lookup(t.node, resolverV4, "udp", "alias.example.net.", dns.TypeA)).To(Equal([]string{addrs["target"]}))
		expectFirstSYN(t.node, addrs["target"])

		By("IPv6: an AAAA answer, asked of the IPv6 resolver")
		Expect(lookup(t.node, resolverV6, "udp", "allowed.example.com.", dns.TypeAAAA)).To(Equal([]string{addrs["allowed6"]}))
		expectFirstSYN(t.node, addrs["allowed6"])

		By("the port of the rule only")
		_, err = dial(t.node, addrs["allowed"], 8080, time.Second)
		Expect(err).To(HaveOccurred())
	})

	It("closes the path when the TTL (and the grace) expire", func() {
		startAgentProcess(t.fw, cfgPath)
		Expect(lookup(t.node, resolverV4, "udp", "short.example.com.", dns.TypeA)).To(Equal([]string{addrs["short"]}))
		open, err := dial(t.node, addrs["short"], servicePort, 700*time.Millisecond)
		Expect(err).NotTo(HaveOccurred())
		By("TTL 1s plus 1s grace later, a new connection is dropped")
		time.Sleep(2500 * time.Millisecond)
		expectDropped(t.node, addrs["short"], servicePort)
		By("an established connection goes on")
		_, err = open.Write([]byte("still there\n"))
		Expect(err).NotTo(HaveOccurred())
		buf := make([]byte, 64)
		_ = open.SetDeadline(time.Now().Add(2 * time.Second))
		n, err := open.Read(buf)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(buf[:n])).To(ContainSubstring(nodeV4))
	})

	It("keeps open and new connections to resolved addresses through a restart of the agent", func() {
		agentRun := startAgentProcess(t.fw, cfgPath)
		Expect(lookup(t.node, resolverV4, "udp", "allowed.example.com.", dns.TypeA)).To(Equal([]string{addrs["allowed"]}))
		open, err := dial(t.node, addrs["allowed"], servicePort, 700*time.Millisecond)
		Expect(err).NotTo(HaveOccurred())
		r := bufio.NewReader(open)
		_ = open.SetDeadline(time.Now().Add(2 * time.Second))
		Expect(r.ReadString('\n')).To(Equal(nodeV4+"\n"), "the greeting")
		echo := func(msg string) {
			GinkgoHelper()
			_ = open.SetDeadline(time.Now().Add(2 * time.Second))
			_, err := fmt.Fprintln(open, msg)
			Expect(err).NotTo(HaveOccurred())
			Expect(r.ReadString('\n')).To(Equal(msg+"\n"), "the open connection goes on")
		}
		echo("before the restart")

		allowed := fwv1alpha1.FQDNSelector{MatchName: "allowed.example.com"}
		Expect(fqdnSet(t.fw, allowed, false)).To(Equal([]string{addrs["allowed"]}))

		By("stopping the agent: the rules and the allowed addresses stay")
		agentRun.stop()
		Expect(fqdnSet(t.fw, allowed, false)).To(Equal([]string{addrs["allowed"]}))
		echo("the agent stopped")
		expectFirstSYN(t.node, addrs["allowed"])
		expectDropped(t.node, addrs["denied"], servicePort)

		By("starting it again: it reads the sets back, and nothing is flushed")
		again := startAgentProcess(t.fw, cfgPath)
		Expect(string(again.out.Contents())).To(ContainSubstring("fqdnSetsRestored=2 addressesRestored=1"))
		Expect(fqdnSet(t.fw, allowed, false)).To(Equal([]string{addrs["allowed"]}))
		echo("the agent started again")
		expectFirstSYN(t.node, addrs["allowed"])
		Expect(lookup(t.node, resolverV4, "udp", "x.wild.example.com.", dns.TypeA)).To(Equal([]string{addrs["wild"]}))
		expectFirstSYN(t.node, addrs["wild"])
		expectDropped(t.node, addrs["denied"], servicePort)
	})

	It("drops a removed selector's address, keeps what another selector of its set allows, and keeps the table", func() {
		three := strings.Replace(fmt.Sprintf(dnsAgentConfig, servicePort, resolverV4+`, "`+resolverV6+`"`),
			"{matchName: short.example.com}", "{matchName: short.example.com}, {matchName: other.example.com}", 1)
		writeConfig(cfgPath, three)
		startAgentProcess(t.fw, cfgPath)
		for name, addr := range map[string]string{"other": addrs["other"], "allowed": addrs["allowed"], "also.wild": addrs["allowed"], "x.wild": addrs["wild"]} {
			Expect(lookup(t.node, resolverV4, "udp", name+".example.com.", dns.TypeA)).To(Equal([]string{addr}))
		}
		expectFirstSYN(t.node, addrs["other"])
		expectFirstSYN(t.node, addrs["allowed"])
		sets := map[string]bool{}
		for _, e := range fqdnElements(t.fw, false) {
			sets[e.Set] = true
		}
		Expect(sets).To(HaveLen(1), "the selectors of one port list share a set")
		handle := tableHandle(t.fw)

		By("removing other.example.com and allowed.example.com; *.wild.example.com allowed the latter's address too")
		writeConfig(cfgPath, fmt.Sprintf(dnsAgentConfig, servicePort, resolverV4+`, "`+resolverV6+`"`))
		Eventually(func() []string { return fqdnSet(t.fw, fwv1alpha1.FQDNSelector{MatchName: "other.example.com"}, false) }, 10*time.Second, 200*time.Millisecond).Should(BeEmpty())
		expectDropped(t.node, addrs["other"], servicePort)
		expectFirstSYN(t.node, addrs["allowed"])
		expectFirstSYN(t.node, addrs["wild"])
		Expect(tableHandle(t.fw)).To(Equal(handle), "a selector change is element deletes, not a new table")
	})
})

// fqdnSet lists the addresses that the kernel's FQDN sets of the family
// hold for a selector, read with nft in the firewall's namespace: the
// elements whose comment names a name the selector matches. The selectors
// of a port list share a set; the comment says what an element was allowed
// for.
func fqdnSet(fw *netns.NS, sel fwv1alpha1.FQDNSelector, v6 bool) []string {
	GinkgoHelper()
	s := fqdn.FromAPI(sel)
	addrs := []string{}
	for _, e := range fqdnElements(fw, v6) {
		for _, name := range strings.Fields(e.Comment) {
			if s.Matches(name) && !slices.Contains(addrs, e.Val) {
				addrs = append(addrs, e.Val)
			}
		}
	}
	return addrs
}

// fqdnElement is an element of an FQDN set as nft lists it.
type fqdnElement struct {
	Set, Val, Comment string
}

// fqdnElements lists the elements of the table's FQDN sets of the family.
func fqdnElements(fw *netns.NS, v6 bool) []fqdnElement {
	GinkgoHelper()
	out, err := fw.Exec("nft", "-j", "list", "table", "inet", ruleset.TableName)
	Expect(err).NotTo(HaveOccurred(), out)
	var listing struct {
		Nftables []struct {
			Set *struct {
				Name string            `json:"name"`
				Elem []json.RawMessage `json:"elem"`
			} `json:"set"`
		} `json:"nftables"`
	}
	Expect(json.Unmarshal([]byte(out), &listing)).To(Succeed())
	var elems []fqdnElement
	for _, item := range listing.Nftables {
		if item.Set == nil {
			continue
		}
		if _, isV6, ok := ruleset.FQDNSetBase(item.Set.Name); !ok || isV6 != v6 {
			continue
		}
		for _, raw := range item.Set.Elem {
			var withTimeout struct {
				Elem struct {
					Val     string `json:"val"`
					Comment string `json:"comment"`
				} `json:"elem"`
			}
			Expect(json.Unmarshal(raw, &withTimeout)).To(Succeed())
			elems = append(elems, fqdnElement{item.Set.Name, withTimeout.Elem.Val, withTimeout.Elem.Comment})
		}
	}
	return elems
}

// tableHandle is the kernel's handle of the agent's table: a replaced table
// has a new one.
func tableHandle(fw *netns.NS) string {
	GinkgoHelper()
	out, err := fw.Exec("nft", "-a", "list", "table", "inet", ruleset.TableName)
	Expect(err).NotTo(HaveOccurred(), out)
	first, _, _ := strings.Cut(out, "\n")
	Expect(first).To(ContainSubstring("# handle "))
	return first
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// httpClientInNS sends an HTTP request with a Host header of its own, from
// the calling thread's namespace.
type httpClientInNS struct{ timeout time.Duration }

func (h *httpClientInNS) get(url, host string) error {
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	d := net.Dialer{}
	hostPort := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
	c, err := d.DialContext(ctx, "tcp", hostPort)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("timeout: %w", err)
		}
		return err
	}
	defer func() { _ = c.Close() }()
	_, err = fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host)
	return err
}
