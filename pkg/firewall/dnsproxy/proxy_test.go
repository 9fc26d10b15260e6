package dnsproxy_test

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy/dnsproxytest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
)

var (
	github   = fwv1alpha1.FQDNSelector{MatchName: "api.github.com"}
	wildcard = fwv1alpha1.FQDNSelector{MatchPattern: "*.s3.example.com"}
	target   = fwv1alpha1.FQDNSelector{MatchName: "target.example.org"}
)

var _ = Describe("Proxy", func() {
	It("allows an allowed name's addresses before it releases the answer", func() {
		f := start(dnsproxytest.Answer("api.github.com. 30 IN A 192.0.2.1", "api.github.com. 30 IN A 192.0.2.2"), defaultBounds, github)
		gate := f.rec.hold()
		answered := make(chan *dns.Msg, 1)
		go func() {
			defer GinkgoRecover()
			answered <- f.ask("udp", "API.GitHub.com.", dns.TypeA)
		}()
		Consistently(answered, 300*time.Millisecond).ShouldNot(Receive(), "no answer while the set update is in flight")
		close(gate)
		var resp *dns.Msg
		Eventually(answered).Should(Receive(&resp))
		Expect(addrs(resp)).To(ConsistOf("192.0.2.1", "192.0.2.2"))
		Expect(f.rec.written()).To(Equal(map[string][]string{set(github, false): {"192.0.2.1", "192.0.2.2"}}))
		Expect(f.rec.elem(0).Timeout).To(Equal(35*time.Second), "TTL 30s plus 5s grace")
		Expect(f.rec.elem(0).Comment).To(Equal("api.github.com"))
	})

	It("answers what needs no set update while another answer's update is in flight, and holds a repeat of that one", func() {
		f := start(func(q *dns.Msg, tcp bool) [][]byte {
			return dnsproxytest.Answer(q.Question[0].Name+" 30 IN A 192.0.2.1")(q, tcp)
		}, defaultBounds, github, wildcard)
		f.ask("udp", "x.s3.example.com.", dns.TypeA)
		gate := f.rec.hold()
		answered := make(chan *dns.Msg, 2)
		for range 2 {
			go func() {
				defer GinkgoRecover()
				answered <- f.ask("udp", "api.github.com.", dns.TypeA)
			}()
		}
		Consistently(answered, 300*time.Millisecond).ShouldNot(Receive(), "neither the first answer nor its repeat before the update")
		Expect(addrs(f.ask("udp", "www.example.com.", dns.TypeA))).To(Equal([]string{"192.0.2.1"}), "a name no selector matches")
		Expect(addrs(f.ask("tcp", "x.s3.example.com.", dns.TypeA))).To(Equal([]string{"192.0.2.1"}), "an allowed name already in its set")
		Expect(answered).NotTo(Receive())
		close(gate)
		Eventually(answered).Should(Receive())
		Eventually(answered).Should(Receive())
		Expect(f.rec.updates()).To(Equal(2), "one for each allowed name: the repeat found the address in the set")
	})

	It("passes answers for names no selector matches through untouched, without a set update", func() {
		f := start(dnsproxytest.Answer("www.example.com. 30 IN A 192.0.2.9"), defaultBounds, github, wildcard)
		resp := f.ask("udp", "www.example.com.", dns.TypeA)
		Expect(addrs(resp)).To(Equal([]string{"192.0.2.9"}))
		Expect(f.rec.updates()).To(BeZero())
	})

	It("allows IPv6 addresses in the selector's IPv6 set, and a wildcard's names", func() {
		f := start(dnsproxytest.Answer("a.b.s3.example.com. 30 IN AAAA 2001:db8::1"), defaultBounds, wildcard)
		f.ask("tcp", "a.b.s3.example.com.", dns.TypeAAAA)
		Expect(f.rec.written()).To(Equal(map[string][]string{set(wildcard, true): {"2001:db8::1"}}))
	})

	It("follows a CNAME chain to an allowed target and from an allowed name", func() {
		f := start(dnsproxytest.Answer(
			"alias.example.com. 30 IN CNAME mid.example.net.",
			"mid.example.net. 30 IN CNAME target.example.org.",
			"target.example.org. 30 IN A 192.0.2.5",
		), defaultBounds, target, fwv1alpha1.FQDNSelector{MatchName: "alias.example.com"})
		f.ask("udp", "alias.example.com.", dns.TypeA)
		Expect(f.rec.written()).To(Equal(map[string][]string{
			set(target, false): {"192.0.2.5"},
			set(fwv1alpha1.FQDNSelector{MatchName: "alias.example.com"}, false): {"192.0.2.5"},
		}))
	})

	It("learns only the asked name's chain in the answer section, of the asked type, unicast", func() {
		f := start(dnsproxytest.Records([]string{
			"api.github.com. 30 IN A 192.0.2.1",
			"target.example.org. 30 IN A 198.51.100.66",          // another allowed name, never asked
			"x.s3.example.com. 30 IN A 198.51.100.67",            // a wildcard's name, never asked
			"api.github.com. 30 IN AAAA 2001:db8::66",            // not the asked type
			"api.github.com. 30 IN A 127.0.0.1",                  // not unicast
			"api.github.com. 30 IN A 0.0.0.0",                    // not unicast
			"api.github.com. 30 IN A 224.0.0.1",                  // multicast
			"other.example.com. 30 IN CNAME target.example.org.", // a chain of another name
		}, []string{"api.github.com. 30 IN NS ns.example.com."},
			[]string{"api.github.com. 30 IN A 198.51.100.68", "target.example.org. 30 IN A 198.51.100.69"}),
			defaultBounds, github, target, wildcard)
		f.ask("udp", "api.github.com.", dns.TypeA)
		Expect(f.rec.written()).To(Equal(map[string][]string{set(github, false): {"192.0.2.1"}}))
	})

	It("drops responses with another ID, another question or garbage, and takes the real one", func() {
		f := start(func(q *dns.Msg, tcp bool) [][]byte {
			pack := func(m *dns.Msg) []byte {
				raw, err := m.Pack()
				Expect(err).NotTo(HaveOccurred())
				return raw
			}
			answer := func(name, addr string) *dns.Msg {
				m := new(dns.Msg).SetReply(q)
				rr, _ := dns.NewRR(name + " 30 IN A " + addr)
				m.Answer = []dns.RR{rr}
				return m
			}
			wrongID := answer("api.github.com.", "198.51.100.1")
			wrongID.Id++
			wrongQuestion := answer("target.example.org.", "198.51.100.2")
			wrongQuestion.Question[0].Name = "target.example.org."
			notResponse := answer("api.github.com.", "198.51.100.3")
			notResponse.Response = false
			return [][]byte{pack(wrongID), pack(wrongQuestion), pack(notResponse), []byte("\x00\x01garbage"), pack(answer("api.github.com.", "192.0.2.1"))}
		}, defaultBounds, github, target)
		resp := f.ask("udp", "api.github.com.", dns.TypeA)
		Expect(addrs(resp)).To(Equal([]string{"192.0.2.1"}))
		Expect(f.rec.written()).To(Equal(map[string][]string{set(github, false): {"192.0.2.1"}}))
	})

	It("reuses an upstream socket after a clean exchange only, and takes nothing left in one for the next answer", func() {
		answer := dnsproxytest.Answer("api.github.com. 30 IN A 192.0.2.1")
		f := start(answer, defaultBounds, github)
		for range 5 {
			f.ask("udp", "api.github.com.", dns.TypeA)
		}
		Expect(f.upstream.UDPSources()).To(HaveLen(1), "one socket for queries one after another")

		// After the answer, another datagram with the query's ID: it waits
		// in the socket for the next query to read.
		f.upstream.SetReply(func(q *dns.Msg, tcp bool) [][]byte {
			m := new(dns.Msg).SetReply(q)
			rr, _ := dns.NewRR("api.github.com. 30 IN A 198.51.100.9")
			m.Answer = []dns.RR{rr}
			stray, _ := m.Pack()
			return append(answer(q, tcp), stray)
		})
		f.ask("udp", "api.github.com.", dns.TypeA)
		f.upstream.SetReply(answer)
		time.Sleep(50 * time.Millisecond) // the stray datagram arrives
		Expect(addrs(f.ask("udp", "api.github.com.", dns.TypeA))).To(Equal([]string{"192.0.2.1"}))
		Expect(f.rec.written()).To(Equal(map[string][]string{set(github, false): {"192.0.2.1"}}))
		f.ask("udp", "api.github.com.", dns.TypeA)
		Expect(f.upstream.UDPSources()).To(HaveLen(2), "the socket that held a stray datagram was closed, not reused")
	})

	It("answers SERVFAIL and allows nothing when only hostile responses come", func() {
		f := start(func(q *dns.Msg, tcp bool) [][]byte {
			m := new(dns.Msg).SetReply(q)
			rr, _ := dns.NewRR("target.example.org. 30 IN A 198.51.100.2")
			m.Answer = []dns.RR{rr}
			m.Question[0].Name = "target.example.org." // a question never asked
			raw, _ := m.Pack()
			m.Question[0].Name = q.Question[0].Name
			m.Id++ // the right question, another ID
			raw2, _ := m.Pack()
			return [][]byte{raw, raw2}
		}, defaultBounds, github, target)
		for _, net := range []string{"udp", "tcp"} {
			resp := f.ask(net, "api.github.com.", dns.TypeA)
			Expect(resp.Rcode).To(Equal(dns.RcodeServerFailure))
		}
		Expect(f.rec.updates()).To(BeZero())
	})

	It("allows at most maxAddressesPerName of 4,000 answers, and says so", func() {
		var rrs []string
		for i := range 4000 {
			rrs = append(rrs, fmt.Sprintf("api.github.com. 30 IN A 198.18.%d.%d", i/250, 1+i%250))
		}
		f := start(dnsproxytest.Answer(rrs...), dnsproxy.Bounds{AddressesPerName: 16, NamesPerSelector: 8, Addresses: 1000}, github)
		resp := f.ask("tcp", "api.github.com.", dns.TypeA)
		Expect(resp.Answer).To(HaveLen(4000), "the client still gets the whole answer")
		Expect(f.rec.written()[set(github, false)]).To(HaveLen(16))
		Expect(f.obs.bound(dnsproxy.BoundAddressesPerName)).To(Equal(1))
		Expect(f.proxy.Status(sel(github), 4)).To(And(HaveField("Count", 16), HaveField("Addresses", HaveLen(4)),
			HaveField("Bound", ContainSubstring("maxAddressesPerName reached for api.github.com"))))
	})

	It("allows no more than the bound of a response that claims 10,000 answers", func() {
		f := start(func(q *dns.Msg, tcp bool) [][]byte {
			m := new(dns.Msg).SetReply(q)
			for i := range 3000 {
				rr, _ := dns.NewRR(fmt.Sprintf("api.github.com. 30 IN A 198.18.%d.%d", i/250, 1+i%250))
				m.Answer = append(m.Answer, rr)
			}
			m.Compress = true
			raw, _ := m.Pack()
			raw[6], raw[7] = 10000>>8, 10000&0xff // ANCOUNT
			return [][]byte{raw}
		}, defaultBounds, github)
		resp := f.ask("tcp", "api.github.com.", dns.TypeA)
		Expect(resp.Answer).To(HaveLen(3000), "the records it holds")
		written := f.rec.written()[set(github, false)]
		Expect(written).To(HaveLen(64))
		for _, a := range written {
			Expect(addrs(resp)).To(ContainElement(a))
		}
		Expect(f.rec.written()).To(HaveLen(1))
	})

	It("bounds the names of a selector and the addresses of all", func() {
		f := start(func(q *dns.Msg, tcp bool) [][]byte {
			return dnsproxytest.Answer(q.Question[0].Name+" 30 IN A 192.0.2."+strings.TrimPrefix(strings.Split(q.Question[0].Name, ".")[0], "n"))(q, tcp)
		}, dnsproxy.Bounds{AddressesPerName: 4, NamesPerSelector: 3, Addresses: 5}, wildcard, fwv1alpha1.FQDNSelector{MatchPattern: "*.example.net"})
		for i := 1; i <= 4; i++ {
			f.ask("udp", fmt.Sprintf("n%d.s3.example.com.", i), dns.TypeA)
		}
		Expect(f.rec.written()[set(wildcard, false)]).To(Equal([]string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}))
		Expect(f.obs.bound(dnsproxy.BoundNamesPerSelector)).To(Equal(1))
		for i := 5; i <= 7; i++ {
			f.ask("udp", fmt.Sprintf("n%d.example.net.", i), dns.TypeA)
		}
		Expect(f.rec.written()[set(fwv1alpha1.FQDNSelector{MatchPattern: "*.example.net"}, false)]).To(Equal([]string{"192.0.2.5", "192.0.2.6"}))
		Expect(f.obs.bound(dnsproxy.BoundAddresses)).To(Equal(1))
	})

	It("costs no set update for a repeated answer, and refreshes with a longer TTL", func() {
		withTTL := func(ttl string) dnsproxytest.Reply {
			return dnsproxytest.Answer("api.github.com. " + ttl + " IN A 192.0.2.1")
		}
		f := start(withTTL("30"), defaultBounds, github)
		f.ask("udp", "api.github.com.", dns.TypeA)
		f.ask("udp", "api.github.com.", dns.TypeA)
		Expect(f.rec.updates()).To(Equal(1))
		f.upstream.SetReply(withTTL("1")) // under the floor of 10s: 15s, less than the 35s in force
		f.ask("udp", "api.github.com.", dns.TypeA)
		Expect(f.rec.updates()).To(Equal(1))
		f.upstream.SetReply(withTTL("300"))
		gate := f.rec.hold()
		f.ask("udp", "api.github.com.", dns.TypeA) // released before its refresh: 192.0.2.1 is allowed for 35s yet
		close(gate)
		Eventually(f.rec.updates).Should(Equal(2))
		Expect(f.rec.elem(1)).To(And(HaveField("Timeout", 305*time.Second), HaveField("Refresh", true)))
	})

	It("takes a day at most from a TTL", func() {
		f := start(dnsproxytest.Answer("api.github.com. 2147483647 IN A 192.0.2.1"), defaultBounds, github)
		f.ask("udp", "api.github.com.", dns.TypeA)
		Expect(f.rec.elem(0).Timeout).To(Equal(24*time.Hour + 5*time.Second))
	})

	It("asks again over TCP when the answer is truncated, learns it whole, and gives the client what fits", func() {
		var rrs []string
		for i := range 200 {
			rrs = append(rrs, fmt.Sprintf("x.s3.example.com. 30 IN A 198.18.0.%d", 1+i))
		}
		f := start(dnsproxytest.Answer(rrs...), defaultBounds, wildcard)
		resp := f.ask("udp", "x.s3.example.com.", dns.TypeA)
		Expect(resp.Truncated).To(BeTrue(), "200 records do not fit 1232 bytes")
		Expect(f.rec.written()[set(wildcard, false)]).To(HaveLen(64), "the whole answer was learned (up to the bound)")
		resp = f.ask("tcp", "x.s3.example.com.", dns.TypeA)
		Expect(resp.Answer).To(HaveLen(200))
		Expect(f.upstream.Queries()).To(Equal(3), "UDP, its TCP retry, and the client's TCP query")
	})

	It("survives garbage from a client and answers the next query", func() {
		f := start(dnsproxytest.Answer("api.github.com. 30 IN A 192.0.2.1"), defaultBounds, github)
		conn, err := net.Dial("udp", f.addr)
		Expect(err).NotTo(HaveOccurred())
		for _, junk := range [][]byte{{}, {0}, []byte("\x12\x34\x01\x00\x00\x01\x00\x00"), make([]byte, 4000), []byte(strings.Repeat("\xff", 600))} {
			_, _ = conn.Write(junk)
		}
		Expect(conn.Close()).To(Succeed())
		tcp, err := net.Dial("tcp", f.addr)
		Expect(err).NotTo(HaveOccurred())
		_, _ = tcp.Write([]byte("\xff\xff\x00"))
		Expect(tcp.Close()).To(Succeed())
		Expect(addrs(f.ask("udp", "api.github.com.", dns.TypeA))).To(Equal([]string{"192.0.2.1"}))
	})

	It("forgets a removed selector and learns a new one, and starts from the kernel's sets after a restart", func() {
		f := start(func(q *dns.Msg, tcp bool) [][]byte {
			return dnsproxytest.Answer(q.Question[0].Name+" 30 IN A 192.0.2.7")(q, tcp)
		}, defaultBounds)
		f.proxy.Restore([]nftables.FQDNSetContent{
			{Name: set(github, false), Comment: sel(github).Key(), Elements: []nftables.FQDNElement{{Addr: netip.MustParseAddr("192.0.2.1"), Timeout: time.Minute, Comment: "api.github.com"}}},
			{Name: set(github, true), V6: true, Comment: sel(github).Key()},
			{Name: "fqdn_0123456789abcdef_v4", Comment: sel(target).Key()}, // a name that is not the comment's
			{Name: set(wildcard, false), Comment: "garbage"},
		})
		Expect(f.proxy.Status(sel(github), 16)).To(And(HaveField("Enforced", true), HaveField("Addresses", []netip.Addr{netip.MustParseAddr("192.0.2.1")})))
		Expect(f.proxy.Status(sel(target), 16).Enforced).To(BeFalse())
		f.ask("udp", "api.github.com.", dns.TypeA)
		Expect(f.rec.written()).To(Equal(map[string][]string{set(github, false): {"192.0.2.7"}}))

		Expect(f.proxy.SetSelectors(bindings(target))).To(Succeed())
		Expect(f.rec.deleted()).To(BeEmpty(), "the removed selector's set went with the table")
		Expect(f.proxy.Status(sel(github), 16).Enforced).To(BeFalse())
		f.ask("udp", "api.github.com.", dns.TypeA)
		f.ask("udp", "target.example.org.", dns.TypeA)
		Expect(f.rec.written()).To(Equal(map[string][]string{set(github, false): {"192.0.2.7"}, set(target, false): {"192.0.2.7"}}))
	})
})
