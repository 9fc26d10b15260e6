package ruleset

import (
	"net/netip"
	"slices"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// SetDNS is the base name of the sets of the resolvers whose queries go to
// the DNS proxy.
const SetDNS = "dns"

// Protocol numbers of UDP and TCP.
const (
	protoTCP = 6
	protoUDP = 17
)

// DNSRedirect says where the nodes' DNS goes: queries to Upstreams, UDP and
// TCP port 53, to the DNS proxy on the firewall's Port.
type DNSRedirect struct {
	Upstreams []netip.Addr
	Port      uint16
}

// WithDNSRedirect returns rs with the DNS redirect: the sets of the
// upstreams; a prerouting chain (nat) that redirects the queries from the
// internal prefixes to them to the proxy's port; and an input chain that
// drops what reaches that port without a redirect, so that the proxy
// answers the nodes only, never the internet. rs is not modified.
func WithDNSRedirect(rs *Ruleset, d DNSRedirect) *Ruleset {
	out := *rs
	out.Sets = slices.Clone(rs.Sets)
	out.Chains = slices.Clone(rs.Chains)
	prerouting := &Chain{Name: "prerouting", Type: "nat", Hook: "prerouting", Priority: -100}
	input := &Chain{Name: "input", Type: "filter", Hook: "input", Priority: 0}
	var upstreams []cidr.Range
	for _, a := range d.Upstreams {
		a = a.Unmap()
		upstreams = append(upstreams, cidr.Range{From: a, To: a})
	}
	upstreams = cidr.MergeRanges(upstreams)
	for _, v6 := range []bool{false, true} {
		out.Sets = append(out.Sets, addrSet(SetName(SetDNS, v6), v6, upstreams))
		for _, proto := range []uint8{protoUDP, protoTCP} {
			prerouting.Rules = append(prerouting.Rules, &Rule{
				ID: "dns-redirect-" + protocolName(proto) + suffix(v6), Family: family(v6), L4Proto: proto, DPort: 53,
				SaddrSet: SetName(SetInternal, v6), DaddrSet: SetName(SetDNS, v6), Counter: true, Verdict: Redirect, RedirectPort: d.Port,
			})
		}
	}
	out.Openings = slices.Clone(rs.Openings)
	for _, proto := range []uint8{protoUDP, protoTCP} {
		input.Rules = append(input.Rules, &Rule{
			ID: "dns-guard-" + protocolName(proto), L4Proto: proto, DPort: d.Port, CtNotDNAT: true, Counter: true, Verdict: Drop,
		})
		// Only redirected queries reach the proxy, even should the agent's
		// own guard be gone.
		out.Openings = append(out.Openings, &Rule{
			ID: "dns-proxy-" + protocolName(proto), L4Proto: proto, DPort: d.Port, CtDNAT: true, Counter: true, Verdict: Accept,
		})
	}
	out.Chains = append(out.Chains, prerouting, input)
	return &out
}
