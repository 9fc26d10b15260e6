package ruleset

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

var protocolNames = map[uint8]string{6: "tcp", 17: "udp", 132: "sctp"}

// Render prints the ruleset in nft syntax, in a form `nft -f` accepts. It is
// what `firewall-agent render` prints and what the agent programs.
func Render(rs *Ruleset) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n", rs.Table)
	for _, s := range rs.Sets {
		renderSet(&b, s)
	}
	for i, c := range rs.Chains {
		if i > 0 || len(rs.Sets) > 0 {
			b.WriteString("\n")
		}
		policy := "accept"
		if c.PolicyDrop {
			policy = "drop"
		}
		fmt.Fprintf(&b, "\tchain %s {\n", c.Name)
		if c.Hook != "" {
			fmt.Fprintf(&b, "\t\ttype %s hook %s priority %d; policy %s;\n", c.Type, c.Hook, c.Priority, policy)
		}
		for _, r := range c.Rules {
			fmt.Fprintf(&b, "\t\t%s comment %q\n", RuleText(r), Comment(r))
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func renderSet(b *strings.Builder, s *Set) {
	addrType := "ipv4_addr"
	if s.V6 {
		addrType = "ipv6_addr"
	}
	flags := "\t\tflags interval\n"
	switch {
	case s.Kind == FQDNSet:
		flags = "\t\tflags timeout\n"
	case s.Kind == ProtoPortSet:
		addrType = "inet_proto . inet_service"
	case s.Kind.Concat():
		addrType += " . inet_proto . inet_service"
	case s.Kind == ServiceSet:
		addrType += " . inet_proto . inet_service . " + addrType
	}
	if s.Kind == AddrProtoPortExactSet {
		flags = ""
	}
	keyword := "set"
	if s.Kind == DispatchMap {
		keyword, addrType = "map", addrType+" : verdict"
	}
	fmt.Fprintf(b, "\t%s %s {\n\t\ttype %s\n%s", keyword, s.Name, addrType, flags)
	if s.Comment != "" {
		fmt.Fprintf(b, "\t\tcomment %q\n", s.Comment)
	}
	if len(s.Elements) > 0 {
		b.WriteString("\t\telements = { ")
		for i, e := range s.Elements {
			if i > 0 {
				b.WriteString(",\n\t\t\t     ")
			}
			b.WriteString(ElementText(s.Kind, e))
		}
		b.WriteString(" }\n")
	}
	b.WriteString("\t}\n")
}

// ElementText prints one set element in nft syntax.
func ElementText(kind SetKind, e Element) string {
	switch kind {
	case AddrSet:
		return e.Addr.String()
	case DispatchMap:
		return e.Addr.String() + " : jump " + e.Chain
	}
	ports := fmt.Sprint(e.PortFrom)
	if e.PortTo != e.PortFrom {
		ports = fmt.Sprintf("%d-%d", e.PortFrom, e.PortTo)
	}
	proto := protocolName(e.Proto)
	if kind == ProtoPortSet {
		return proto + " . " + ports
	}
	text := e.Addr.String() + " . " + proto + " . " + ports
	if kind == ServiceSet {
		text += " . " + e.Src.String()
	}
	return text
}

func protocolName(p uint8) string {
	if name, ok := protocolNames[p]; ok {
		return name
	}
	return fmt.Sprint(p)
}

// RuleText prints a rule in nft syntax without its comment.
func RuleText(r *Rule) string {
	var parts []string
	ip := "ip"
	if r.Family == 6 {
		ip = "ip6"
	}
	if r.IIfName != "" {
		parts = append(parts, fmt.Sprintf("iifname %q", r.IIfName))
	}
	if r.OIfName != "" {
		parts = append(parts, fmt.Sprintf("oifname %q", r.OIfName))
	}
	if r.LimitOverMiBps > 0 {
		parts = append(parts, fmt.Sprintf("limit rate over %d mbytes/second", r.LimitOverMiBps))
	}
	if r.CtEstablishedRelated {
		parts = append(parts, "ct state established,related")
	}
	if r.CtNew {
		parts = append(parts, "ct state new")
	}
	if r.L4Proto != 0 {
		parts = append(parts, "meta l4proto "+protocolName(r.L4Proto))
	}
	if r.DPort != 0 {
		parts = append(parts, fmt.Sprintf("th dport %d", r.DPort))
	}
	if r.CtNotDNAT {
		parts = append(parts, "ct status & dnat == 0")
	}
	if r.CtDNAT {
		parts = append(parts, "ct status dnat")
	}
	if r.SaddrSet != "" {
		parts = append(parts, fmt.Sprintf("%s saddr @%s", ip, r.SaddrSet))
	}
	if r.DaddrSet != "" {
		parts = append(parts, fmt.Sprintf("%s daddr @%s", ip, r.DaddrSet))
	}
	if r.ConcatSet != "" {
		addr := "daddr"
		if r.ConcatSaddr {
			addr = "saddr"
		}
		parts = append(parts, fmt.Sprintf("%s %s . meta l4proto . th dport @%s", ip, addr, r.ConcatSet))
	}
	if r.PortSet != "" {
		parts = append(parts, "meta l4proto . th dport @"+r.PortSet)
	}
	if r.ServiceSet != "" {
		parts = append(parts, fmt.Sprintf("%s daddr . meta l4proto . th dport . %s saddr @%s", ip, ip, r.ServiceSet))
	}
	if r.DispatchMap != "" {
		addr := "daddr"
		if r.DispatchSaddr {
			addr = "saddr"
		}
		parts = append(parts, fmt.Sprintf("%s %s vmap @%s", ip, addr, r.DispatchMap))
	}
	if r.LogLimitPerSecond > 0 {
		parts = append(parts, fmt.Sprintf("limit rate %d/second", r.LogLimitPerSecond))
	}
	if r.Counter {
		parts = append(parts, "counter")
	}
	if r.LogPrefix != "" {
		parts = append(parts, fmt.Sprintf("log prefix %q", r.LogPrefix))
		if r.LogGroup != 0 {
			parts = append(parts, fmt.Sprintf("group %d", r.LogGroup))
		}
	}
	switch r.Verdict {
	case Accept:
		parts = append(parts, "accept")
	case Drop:
		parts = append(parts, "drop")
	case SNAT:
		parts = append(parts, fmt.Sprintf("snat %s to %s", ip, r.SNATTo))
	case Masquerade:
		parts = append(parts, "masquerade")
	case Jump:
		parts = append(parts, "jump "+r.JumpTo)
	case Redirect:
		parts = append(parts, fmt.Sprintf("redirect to :%d", r.RedirectPort))
	}
	return strings.Join(parts, " ")
}

// Comment is the rule's comment: its ID and a hash of its content. The agent
// compares comments to see whether the kernel holds the desired rules.
func Comment(r *Rule) string {
	sum := sha256.Sum256([]byte(RuleText(r)))
	return r.ID + " " + hex.EncodeToString(sum[:4])
}
