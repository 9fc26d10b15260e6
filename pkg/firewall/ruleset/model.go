package ruleset

import (
	"slices"
	"strings"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// TableName is the agent's own table (family inet). The agent never touches
// any other table.
const TableName = "firewall-agent"

// DropLogPrefix starts the kernel log line of every logged drop.
const DropLogPrefix = "firewall-agent drop: "

// Ruleset is the desired content of the agent's table.
type Ruleset struct {
	Table  string
	Sets   []*Set
	Chains []*Chain
	// FQDN says which FQDN sets each selector's addresses go to: the DNS
	// proxy's business, not the kernel's; sorted by selector key.
	FQDN []FQDNBinding
	// Openings are the input rules the agent's listeners (the DNS proxy,
	// the metrics) need in the firewall image's own table, whose input chain
	// drops what it does not know: mirrored there in the kernel only, never
	// in the agent's table, whose input chain keeps its own guards.
	Openings []*Rule
}

// SetKind says what a set's elements are.
type SetKind int

const (
	// AddrSet holds address ranges: type ipvN_addr; flags interval.
	AddrSet SetKind = iota
	// AddrProtoPortSet holds address range . protocol . port range boxes:
	// type ipvN_addr . inet_proto . inet_service; flags interval.
	AddrProtoPortSet
	// AddrProtoPortExactSet holds single address . protocol . port elements:
	// type ipvN_addr . inet_proto . inet_service, a hash set without
	// intervals, which the kernel updates in constant time.
	AddrProtoPortExactSet
	// ServiceSet holds destination . protocol . port . source range elements:
	// type ipvN_addr . inet_proto . inet_service . ipvN_addr; flags interval.
	// The destination and port are single values, the source a range.
	ServiceSet
	// DispatchMap maps address ranges to the shard chain to jump to:
	// type ipvN_addr : verdict; flags interval. Its elements are disjoint
	// and cover the family's addresses.
	DispatchMap
	// FQDNSet holds the addresses the DNS proxy allowed for the FQDN
	// selectors of one port list: type ipvN_addr; flags timeout. Its
	// elements are not part of the model: the proxy adds them with a timeout
	// each and deletes those of a removed selector; the programmer keeps
	// them across table replacements and never removes them.
	FQDNSet
	// ProtoPortSet holds protocol . port range elements (Addr unused):
	// type inet_proto . inet_service; flags interval; of no family.
	ProtoPortSet
)

// Concat tells whether the set's elements are address . proto . port.
func (k SetKind) Concat() bool { return k == AddrProtoPortSet || k == AddrProtoPortExactSet }

// Set is a named interval set of one address family.
type Set struct {
	Name string
	V6   bool
	Kind SetKind
	// Comment is kept with the set in the kernel (an FQDNSet's port list,
	// for people).
	Comment string
	// Elements are disjoint and sorted by CompareElements.
	Elements []Element
}

// Element is one set element. Proto and the ports are only used in the
// address . proto . port sets, Src only in a ServiceSet, Chain only in a
// DispatchMap.
type Element struct {
	Addr             cidr.Range
	Proto            uint8
	PortFrom, PortTo uint16
	Src              cidr.Range
	// Chain is the chain a DispatchMap element jumps to.
	Chain string
}

// CompareElements orders elements by address range, protocol, port range
// and source range: a total order, so two sorted lists of elements can be
// compared and diffed in one pass.
func CompareElements(a, b Element) int {
	if c := a.Addr.From.Compare(b.Addr.From); c != 0 {
		return c
	}
	if c := a.Addr.To.Compare(b.Addr.To); c != 0 {
		return c
	}
	if a.Proto != b.Proto {
		return int(a.Proto) - int(b.Proto)
	}
	if a.PortFrom != b.PortFrom {
		return int(a.PortFrom) - int(b.PortFrom)
	}
	if a.PortTo != b.PortTo {
		return int(a.PortTo) - int(b.PortTo)
	}
	if c := a.Src.From.Compare(b.Src.From); c != 0 {
		return c
	}
	if c := a.Src.To.Compare(b.Src.To); c != 0 {
		return c
	}
	return strings.Compare(a.Chain, b.Chain)
}

// Chain is a chain of the table: a base chain, or a regular chain (no Type
// and Hook) that rules and verdict maps jump to.
type Chain struct {
	Name     string
	Type     string // filter or nat; empty for a regular chain
	Hook     string // forward or postrouting; empty for a regular chain
	Priority int32
	// PolicyDrop is the chain policy; accept otherwise.
	PolicyDrop bool
	Rules      []*Rule
}

// Rule is one rule, described by what it matches and does rather than by
// kernel expressions, so it can be rendered and programmed from one source.
// Matches apply in field order.
type Rule struct {
	// ID names the rule; with a hash of its content it is the rule's comment,
	// which lets the agent see whether the kernel's rule is the desired one.
	ID string
	// Family restricts the rule to IPv4 (4) or IPv6 (6); 0 is both.
	Family           int
	IIfName, OIfName string
	// LimitOverMiBps matches when the traffic is over this many MiB/s.
	LimitOverMiBps uint32
	// CtEstablishedRelated matches ct state established,related.
	CtEstablishedRelated bool
	// CtNew matches ct state new: the first packet of a connection.
	CtNew bool
	// L4Proto, if set, matches the layer 4 protocol and DPort, if set, the
	// destination port.
	L4Proto uint8
	DPort   uint16
	// CtNotDNAT matches connections whose destination was not translated:
	// packets that reached the firewall's own port without a redirect.
	CtNotDNAT bool
	// CtDNAT matches connections whose destination was translated: packets
	// that reached the firewall's own port through a redirect.
	CtDNAT bool
	// SaddrSet and DaddrSet match the source and destination address against
	// an AddrSet.
	SaddrSet, DaddrSet string
	// ConcatSet matches address . l4proto . destination port against an
	// AddrProtoPortSet or AddrProtoPortExactSet, with the source address if ConcatSaddr, else the
	// destination.
	ConcatSet   string
	ConcatSaddr bool
	// PortSet matches l4proto . destination port against a ProtoPortSet.
	PortSet string
	// ServiceSet matches destination address . l4proto . destination port .
	// source address against a ServiceSet.
	ServiceSet string
	// DispatchMap jumps to the chain a DispatchMap gives for the destination
	// address, or the source address if DispatchSaddr; a packet that the
	// chain does not accept comes back to the next rule. Such a rule has no
	// counter and no verdict of its own.
	DispatchMap   string
	DispatchSaddr bool
	// LogLimitPerSecond, if set, logs at most so many packets per second with
	// LogPrefix; such a rule has no verdict.
	LogLimitPerSecond uint32
	LogPrefix         string
	// LogGroup, if set, sends the logged packets to this NFLOG group
	// instead of the kernel log.
	LogGroup uint16
	Counter  bool
	Verdict  Verdict
	// SNATTo is the address to source-NAT to (Verdict NAT); Masquerade when empty.
	SNATTo string
	// JumpTo is the chain of Verdict Jump.
	JumpTo string
	// RedirectPort is the local port of Verdict Redirect.
	RedirectPort uint16
}

// Verdict of a rule.
type Verdict int

const (
	// Continue lets the packet go on to the next rule.
	Continue Verdict = iota
	Accept
	Drop
	// SNAT source-NATs to Rule.SNATTo.
	SNAT
	// Masquerade source-NATs to the outgoing interface's address.
	Masquerade
	// Jump goes to the regular chain Rule.JumpTo and comes back when that
	// chain does not decide.
	Jump
	// Redirect sends the packet to the firewall itself, port
	// Rule.RedirectPort.
	Redirect
)

// Set returns the set with the given name, nil if there is none.
func (rs *Ruleset) Set(name string) *Set {
	for _, s := range rs.Sets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// DiffElements returns the elements of want that are not in have and those
// of have that are not in want. Both must be sorted by CompareElements; one
// pass over both, no map.
func DiffElements(have, want []Element) (added, removed []Element) {
	return diffSorted(have, want, CompareElements)
}

// diffSorted returns the items of want that are not in have and those of have
// that are not in want, for lists sorted by cmp.
func diffSorted[T any](have, want []T, cmp func(a, b T) int) (added, removed []T) {
	i, j := 0, 0
	for i < len(have) && j < len(want) {
		switch c := cmp(have[i], want[j]); {
		case c == 0:
			i++
			j++
		case c < 0:
			removed = append(removed, have[i])
			i++
		default:
			added = append(added, want[j])
			j++
		}
	}
	removed = append(removed, have[i:]...)
	added = append(added, want[j:]...)
	return added, removed
}

// Elements returns the elements of the set base of the given family, collected
// from its shards, sorted.
func (rs *Ruleset) Elements(base string, v6 bool) []Element {
	var out []Element
	for _, s := range rs.Sets {
		if s.V6 == v6 && (s.Name == SetName(base, v6) || strings.HasPrefix(s.Name, SetName(base, v6)+"_") && s.Kind.Concat()) {
			out = append(out, s.Elements...)
		}
	}
	slices.SortFunc(out, CompareElements)
	return out
}

func addrSet(name string, v6 bool, ranges []cidr.Range) *Set {
	s := &Set{Name: name, V6: v6, Kind: AddrSet}
	for _, r := range ranges {
		if r.From.Is6() == v6 {
			s.Elements = append(s.Elements, Element{Addr: r})
		}
	}
	return s
}
