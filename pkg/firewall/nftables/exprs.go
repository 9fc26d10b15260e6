package nftables

import (
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// Registers: 1 is the first 128-bit register; 9.. are 32-bit registers (9 is
// the second quarter of register 1). A concatenation is loaded into adjacent
// 32-bit registers starting at register 1, each field padded to 4 bytes.
const (
	reg1 = 1
	// reg32Base is NFT_REG32_00, the 32-bit view of register 1.
	reg32Base = 8
)

// ipsDstNAT is the conntrack status bit of a translated destination
// (IPS_DST_NAT), which a redirect sets.
const ipsDstNAT = 1 << 5

// exprs translates a model rule into kernel expressions, in the order of the
// fields of ruleset.Rule, which is also the order Render prints them.
func exprs(r *ruleset.Rule, sets map[string]*nftables.Set) ([]expr.Any, error) {
	var out []expr.Any
	v6 := r.Family == 6
	if r.Family != 0 {
		proto := byte(unix.NFPROTO_IPV4)
		if v6 {
			proto = unix.NFPROTO_IPV6
		}
		out = append(out,
			&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: reg1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{proto}},
		)
	}
	if r.IIfName != "" {
		out = append(out, &expr.Meta{Key: expr.MetaKeyIIFNAME, Register: reg1}, &expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: ifname(r.IIfName)})
	}
	if r.OIfName != "" {
		out = append(out, &expr.Meta{Key: expr.MetaKeyOIFNAME, Register: reg1}, &expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: ifname(r.OIfName)})
	}
	if r.LimitOverMiBps > 0 {
		out = append(out, &expr.Limit{Type: expr.LimitTypePktBytes, Rate: uint64(r.LimitOverMiBps) << 20, Over: true, Unit: expr.LimitTimeSecond})
	}
	if r.CtNew {
		out = append(out,
			&expr.Ct{Register: reg1, Key: expr.CtKeySTATE},
			&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
				Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitNEW),
				Xor:  binaryutil.NativeEndian.PutUint32(0)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: binaryutil.NativeEndian.PutUint32(0)},
		)
	}
	if r.CtEstablishedRelated {
		out = append(out,
			&expr.Ct{Register: reg1, Key: expr.CtKeySTATE},
			&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
				Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED),
				Xor:  binaryutil.NativeEndian.PutUint32(0)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: binaryutil.NativeEndian.PutUint32(0)},
		)
	}
	if r.L4Proto != 0 {
		out = append(out, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1}, &expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{r.L4Proto}})
	}
	if r.DPort != 0 {
		out = append(out,
			&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: binaryutil.BigEndian.PutUint16(r.DPort)},
		)
	}
	if r.CtNotDNAT {
		out = append(out,
			&expr.Ct{Register: reg1, Key: expr.CtKeySTATUS},
			&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
				Mask: binaryutil.NativeEndian.PutUint32(ipsDstNAT), Xor: binaryutil.NativeEndian.PutUint32(0)},
			&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: binaryutil.NativeEndian.PutUint32(0)},
		)
	}
	if r.CtDNAT {
		out = append(out,
			&expr.Ct{Register: reg1, Key: expr.CtKeySTATUS},
			&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
				Mask: binaryutil.NativeEndian.PutUint32(ipsDstNAT), Xor: binaryutil.NativeEndian.PutUint32(0)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: binaryutil.NativeEndian.PutUint32(0)},
		)
	}
	lookup := func(name string) (*expr.Lookup, error) {
		s, ok := sets[name]
		if !ok {
			return nil, fmt.Errorf("rule %s refers to unknown set %s", r.ID, name)
		}
		return &expr.Lookup{SourceRegister: reg1, SetName: s.Name, SetID: s.ID}, nil
	}
	for _, m := range []struct {
		set   string
		saddr bool
	}{{r.SaddrSet, true}, {r.DaddrSet, false}} {
		if m.set == "" {
			continue
		}
		l, err := lookup(m.set)
		if err != nil {
			return nil, err
		}
		out = append(out, addrPayload(v6, m.saddr, reg1), l)
	}
	if r.ConcatSet != "" {
		l, err := lookup(r.ConcatSet)
		if err != nil {
			return nil, err
		}
		next := uint32(reg32Base + 1) // after an IPv4 address
		if v6 {
			next = reg32Base + 4
		}
		out = append(out,
			addrPayload(v6, r.ConcatSaddr, reg1),
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: next},
			&expr.Payload{DestRegister: next + 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			l,
		)
	}
	if r.PortSet != "" {
		l, err := lookup(r.PortSet)
		if err != nil {
			return nil, err
		}
		// l4proto . dport in the first two 32-bit registers.
		out = append(out,
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg32Base},
			&expr.Payload{DestRegister: reg32Base + 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			l,
		)
	}
	if r.ServiceSet != "" {
		l, err := lookup(r.ServiceSet)
		if err != nil {
			return nil, err
		}
		// daddr . l4proto . dport . saddr in adjacent 32-bit registers.
		next := uint32(reg32Base + 1)
		if v6 {
			next = reg32Base + 4
		}
		out = append(out,
			addrPayload(v6, false, reg1),
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: next},
			&expr.Payload{DestRegister: next + 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			addrPayload(v6, true, next+2),
			l,
		)
	}
	if r.DispatchMap != "" {
		l, err := lookup(r.DispatchMap)
		if err != nil {
			return nil, err
		}
		// A verdict map: the lookup writes the verdict register.
		l.IsDestRegSet, l.DestRegister = true, 0
		out = append(out, addrPayload(v6, r.DispatchSaddr, reg1), l)
	}
	if r.LogLimitPerSecond > 0 {
		// nft's default burst for packet limits is 5.
		out = append(out, &expr.Limit{Type: expr.LimitTypePkts, Rate: uint64(r.LogLimitPerSecond), Unit: expr.LimitTimeSecond, Burst: 5})
	}
	if r.Counter {
		out = append(out, &expr.Counter{})
	}
	if r.LogPrefix != "" {
		l := &expr.Log{Key: 1 << unix.NFTA_LOG_PREFIX, Data: []byte(r.LogPrefix)}
		if r.LogGroup != 0 {
			l.Key |= 1 << unix.NFTA_LOG_GROUP
			l.Group = r.LogGroup
		}
		out = append(out, l)
	}
	switch r.Verdict {
	case ruleset.Continue:
	case ruleset.Accept:
		out = append(out, &expr.Verdict{Kind: expr.VerdictAccept})
	case ruleset.Drop:
		out = append(out, &expr.Verdict{Kind: expr.VerdictDrop})
	case ruleset.Masquerade:
		out = append(out, &expr.Masq{})
	case ruleset.Jump:
		out = append(out, &expr.Verdict{Kind: expr.VerdictJump, Chain: r.JumpTo})
	case ruleset.Redirect:
		out = append(out,
			&expr.Immediate{Register: reg1, Data: binaryutil.BigEndian.PutUint16(r.RedirectPort)},
			&expr.Redir{RegisterProtoMin: reg1, Flags: unix.NF_NAT_RANGE_PROTO_SPECIFIED},
		)
	case ruleset.SNAT:
		addr, err := netip.ParseAddr(r.SNATTo)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", r.ID, err)
		}
		fam := uint32(unix.NFPROTO_IPV4)
		if addr.Is6() {
			fam = unix.NFPROTO_IPV6
		}
		out = append(out,
			&expr.Immediate{Register: reg1, Data: addr.AsSlice()},
			&expr.NAT{Type: expr.NATTypeSourceNAT, Family: fam, RegAddrMin: reg1},
		)
	default:
		return nil, fmt.Errorf("rule %s: unknown verdict %d", r.ID, r.Verdict)
	}
	return out, nil
}

// addrPayload loads the source or destination address of the network header.
func addrPayload(v6, saddr bool, reg uint32) *expr.Payload {
	p := &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4}
	switch {
	case !v6 && saddr:
		p.Offset = 12
	case v6 && saddr:
		p.Offset, p.Len = 8, 16
	case v6:
		p.Offset, p.Len = 24, 16
	}
	return p
}

// ifname is an interface name as the kernel compares it: NUL-padded to
// IFNAMSIZ.
func ifname(name string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return b
}
