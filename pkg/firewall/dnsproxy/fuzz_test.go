package dnsproxy

import (
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
)

// FuzzAnswerAddresses: whatever a resolver sends, reading its answer never
// panics, and every address taken is an A or AAAA record of the answer
// section, of the asked type, owned by the asked name or a name of its
// CNAME chain there.
func FuzzAnswerAddresses(f *testing.F) {
	for _, rrs := range [][]string{
		{"a.example.com. 30 IN A 192.0.2.1"},
		{"a.example.com. 30 IN CNAME b.example.com.", "b.example.com. 30 IN A 192.0.2.2", "c.example.com. 30 IN A 192.0.2.3"},
		{"a.example.com. 30 IN CNAME a.example.com."},
	} {
		m := new(dns.Msg).SetQuestion("a.example.com.", dns.TypeA)
		m.Response = true
		for _, s := range rrs {
			rr, _ := dns.NewRR(s)
			m.Answer = append(m.Answer, rr)
		}
		raw, _ := m.Pack()
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		resp := new(dns.Msg)
		if resp.Unpack(raw) != nil || len(resp.Question) != 1 {
			return
		}
		q := resp.Question[0]
		chain, owned := answerAddresses(q, resp)
		if len(chain) > maxChain || len(owned) != len(chain) {
			t.Fatalf("chain of %d names, %d owner lists", len(chain), len(owned))
		}
		for i, name := range chain {
			for _, a := range owned[i] {
				if !a.addr.IsGlobalUnicast() || !recordOf(resp, q.Qtype, name, a.addr) {
					t.Fatalf("%s taken for %s, which the answer section does not give it", a.addr, name)
				}
			}
		}
	})
}

func recordOf(m *dns.Msg, qtype uint16, name string, addr netip.Addr) bool {
	for _, rr := range m.Answer {
		owner, ok := fqdn.CanonicalName(rr.Header().Name)
		if !ok || owner != name || rr.Header().Rrtype != qtype {
			continue
		}
		switch r := rr.(type) {
		case *dns.A:
			if a, _ := netip.AddrFromSlice(r.A.To4()); a == addr {
				return true
			}
		case *dns.AAAA:
			if a, _ := netip.AddrFromSlice(r.AAAA); a == addr {
				return true
			}
		}
	}
	return false
}
