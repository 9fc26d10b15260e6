package agent_test

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/miekg/dns"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy/dnsproxytest"
)

// hostileResolver is the address of a resolver that lies, in the outside
// namespace: the only upstream of the agent in these specs.
const hostileResolver = "203.0.113.54"

const hostileAgentConfig = `name: fw-dns-hostile
sources:
  static:
    firewall: {internalPrefixes: ["10.0.1.0/24", "fd00:1::/64"]}
    cwnp:
      egress:
      - toFQDNs: [{matchName: allowed.example.com}, {matchName: target.example.org}, {matchName: many.example.com}]
        ports: [{port: %d}]
controllers:
  firewall: {source: static}
  cwnp: {source: static}
dns: {upstreams: [%s], maxAddressesPerName: 16}
`

var _ = Describe("toFQDNs against a hostile resolver, in the kernel's sets", func() {
	var t *topology
	// Addresses of the outside host that no answer may open: each serves on
	// servicePort, so that a connection would get through if it were allowed.
	lies := map[string]string{
		"wrongID": "203.0.113.20", "wrongQuestion": "203.0.113.21", "extraAnswer": "203.0.113.22",
		"additional": "203.0.113.23", "onlyWrongID": "203.0.113.24",
	}
	const allowedAddr = "203.0.113.10"
	var (
		allowed = fwv1alpha1.FQDNSelector{MatchName: "allowed.example.com"}
		target  = fwv1alpha1.FQDNSelector{MatchName: "target.example.org"}
		many    = fwv1alpha1.FQDNSelector{MatchName: "many.example.com"}
	)

	// reply answers as a resolver that lies would, per name asked.
	reply := func(q *dns.Msg, tcp bool) [][]byte {
		answer := func(rrs ...string) *dns.Msg {
			m := new(dns.Msg).SetReply(q)
			for _, s := range rrs {
				rr, err := dns.NewRR(s)
				if err != nil {
					panic(err)
				}
				m.Answer = append(m.Answer, rr)
			}
			return m
		}
		pack := func(m *dns.Msg) []byte {
			raw, err := m.Pack()
			if err != nil {
				panic(err)
			}
			return raw
		}
		switch strings.ToLower(q.Question[0].Name) {
		case "allowed.example.com.":
			// First a response with another ID, then one to a question never
			// asked, then the answer: with an extra A record for another
			// allowed name in the answer section and one in the additional.
			wrongID := answer("allowed.example.com. 60 IN A " + lies["wrongID"])
			wrongID.Id++
			wrongQuestion := answer("target.example.org. 60 IN A " + lies["wrongQuestion"])
			wrongQuestion.Question[0].Name = "target.example.org."
			real := answer("allowed.example.com. 60 IN A "+allowedAddr, "target.example.org. 60 IN A "+lies["extraAnswer"])
			extra, _ := dns.NewRR("target.example.org. 60 IN A " + lies["additional"])
			real.Extra = []dns.RR{extra}
			if tcp {
				return [][]byte{pack(real)}
			}
			return [][]byte{pack(wrongID), pack(wrongQuestion), pack(real)}
		case "target.example.org.":
			// Only a response with another ID: never the answer.
			m := answer("target.example.org. 60 IN A " + lies["onlyWrongID"])
			m.Id++
			return [][]byte{pack(m)}
		case "many.example.com.":
			// As many records as a message holds, claiming 10,000; over UDP
			// truncated, so that the proxy asks again over TCP.
			if !tcp {
				m := new(dns.Msg).SetReply(q)
				m.Truncated = true
				return [][]byte{pack(m)}
			}
			var rrs []string
			for i := range 4000 {
				rrs = append(rrs, fmt.Sprintf("many.example.com. 60 IN A 198.18.%d.%d", i/250, 1+i%250))
			}
			m := answer(rrs...)
			m.Compress = true
			raw := pack(m)
			raw[6], raw[7] = 10000>>8, 10000&0xff // ANCOUNT
			return [][]byte{raw}
		}
		return [][]byte{pack(new(dns.Msg).SetRcode(q, dns.RcodeNameError))}
	}

	BeforeEach(func() {
		t = newTopology()
		for _, a := range append(mapValues(lies), allowedAddr, hostileResolver) {
			Expect(t.outside.IP("addr", "add", a+"/24", "dev", "eth0")).To(Succeed())
		}
		serve(t.outside, "::", servicePort)
		var server *dnsproxytest.Server
		Expect(t.outside.Do(func() (err error) {
			server, err = dnsproxytest.Start(hostileResolver+":53", reply)
			return err
		})).To(Succeed())
		DeferCleanup(server.Close)
		cfgPath := filepath.Join(GinkgoT().TempDir(), "config.yaml")
		writeConfig(cfgPath, fmt.Sprintf(hostileAgentConfig, servicePort, hostileResolver))
		startAgentProcess(t.fw, cfgPath)
	})

	It("adds nothing beyond the asked name's own answer", func() {
		By("another ID, a question never asked, an extra A record for another allowed name, glue")
		Expect(lookup(t.node, hostileResolver, "udp", "allowed.example.com.", dns.TypeA)).To(ConsistOf(allowedAddr, lies["extraAnswer"]),
			"the client gets the answer as the resolver sent it")
		Expect(fqdnSet(t.fw, allowed, false)).To(Equal([]string{allowedAddr}))
		Expect(fqdnSet(t.fw, target, false)).To(BeEmpty())
		expectFirstSYN(t.node, allowedAddr)

		By("only a response with another ID: the client gets SERVFAIL, the set nothing")
		_, err := lookup(t.node, hostileResolver, "udp", "target.example.org.", dns.TypeA)
		Expect(err).To(MatchError("rcode SERVFAIL"))
		Expect(fqdnSet(t.fw, target, false)).To(BeEmpty())

		By("a response that claims 10,000 answers: the bound of addresses per name, each from the answer")
		Expect(lookup(t.node, hostileResolver, "udp", "many.example.com.", dns.TypeA)).To(BeEmpty(),
			"truncated over UDP: the proxy learned the answer over TCP and gave the client the truncated one")
		inSet := fqdnSet(t.fw, many, false)
		Expect(inSet).To(HaveLen(16), "maxAddressesPerName")
		got, err := lookup(t.node, hostileResolver, "tcp", "many.example.com.", dns.TypeA)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(HaveLen(4000), "the records the message holds")
		Expect(got).To(ContainElements(inSet))
		Expect(fqdnSet(t.fw, many, false)).To(ConsistOf(inSet))
		Expect(fqdnSet(t.fw, many, true)).To(BeEmpty())

		By("no address any of those lies named gets through")
		for _, a := range lies {
			expectDropped(t.node, a, servicePort)
		}

		By("the proxy still answers")
		Expect(lookup(t.node, hostileResolver, "tcp", "allowed.example.com.", dns.TypeA)).To(ConsistOf(allowedAddr, lies["extraAnswer"]))
	})
})
