package dnsproxy

import (
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
)

// maxChain bounds the names of a CNAME chain the proxy follows inside an
// answer (resolvers give up after 8 to 16).
const maxChain = 16

// Why a response is not taken as the answer to a query.
var (
	errNotResponse   = errors.New("not a response")
	errIDMismatch    = errors.New("the response carries another ID")
	errQuestion      = errors.New("the response answers another question")
	errOpcodeChanged = errors.New("the response has another opcode")
)

// matches checks that resp answers query: a response, with the query's ID,
// opcode and its one question (the name without regard to case, as
// resolvers may echo it in another case).
func matches(query, resp *dns.Msg) error {
	switch {
	case !resp.Response:
		return errNotResponse
	case resp.Id != query.Id:
		return errIDMismatch
	case resp.Opcode != query.Opcode:
		return errOpcodeChanged
	case len(resp.Question) != 1 || len(query.Question) != 1:
		return errQuestion
	}
	q, r := query.Question[0], resp.Question[0]
	if q.Qtype != r.Qtype || q.Qclass != r.Qclass || !strings.EqualFold(q.Name, r.Name) {
		return errQuestion
	}
	return nil
}

// addrTTL is an address record's address and TTL.
type addrTTL struct {
	addr netip.Addr
	ttl  time.Duration
}

// answerAddresses returns the asked name and the names of its CNAME chain
// inside the answer section, in chain order, and per name the addresses of
// the asked type it owns there. Nothing else counts: not the authority or
// additional sections, not records of other names (an extra A record for
// another name is ignored), not addresses that are not unicast. Only A and
// AAAA questions of class IN with a NOERROR answer teach anything.
func answerAddresses(q dns.Question, resp *dns.Msg) (chain []string, owned [][]addrTTL) {
	if resp.Rcode != dns.RcodeSuccess || q.Qclass != dns.ClassINET || (q.Qtype != dns.TypeA && q.Qtype != dns.TypeAAAA) {
		return nil, nil
	}
	name, ok := fqdn.CanonicalName(q.Name)
	if !ok {
		return nil, nil
	}
	// The first CNAME of each owner; a second one is not valid DNS.
	cnames := map[string]string{}
	for _, rr := range resp.Answer {
		if c, isCNAME := rr.(*dns.CNAME); isCNAME && c.Hdr.Class == dns.ClassINET {
			owner, ok1 := fqdn.CanonicalName(c.Hdr.Name)
			target, ok2 := fqdn.CanonicalName(c.Target)
			if _, dup := cnames[owner]; ok1 && ok2 && !dup {
				cnames[owner] = target
			}
		}
	}
	pos := map[string]int{}
	for len(chain) < maxChain {
		if _, loop := pos[name]; loop {
			break
		}
		pos[name] = len(chain)
		chain = append(chain, name)
		next, ok := cnames[name]
		if !ok {
			break
		}
		name = next
	}
	owned = make([][]addrTTL, len(chain))
	for _, rr := range resp.Answer {
		var addr netip.Addr
		switch r := rr.(type) {
		case *dns.A:
			if q.Qtype == dns.TypeA {
				addr, _ = netip.AddrFromSlice(r.A.To4())
			}
		case *dns.AAAA:
			if q.Qtype == dns.TypeAAAA && len(r.AAAA) == 16 {
				addr = netip.AddrFrom16([16]byte(r.AAAA))
			}
		}
		h := rr.Header()
		if !addr.IsValid() || addr.Is4In6() || !addr.IsGlobalUnicast() || h.Class != dns.ClassINET {
			continue
		}
		owner, ok := fqdn.CanonicalName(h.Name)
		if !ok {
			continue
		}
		if i, inChain := pos[owner]; inChain {
			owned[i] = append(owned[i], addrTTL{addr, time.Duration(h.Ttl) * time.Second})
		}
	}
	return chain, owned
}
