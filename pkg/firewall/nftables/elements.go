package nftables

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// ElementsPerMessage bounds the elements in one netlink message. The elements
// travel in one nested attribute whose length is 16 bits wide: an IPv6
// address . proto . port range element takes 68 bytes, so 512 stay well below.
const ElementsPerMessage = 512

// encode turns a model element into the kernel elements. An address range
// in a plain interval set is a start element and an interval-end element on
// the address after the range (none when the range ends at the last address);
// a concatenated interval set takes the range as key and key end.
func encode(kind ruleset.SetKind, e ruleset.Element) []nftables.SetElement {
	if kind == ruleset.AddrSet || kind == ruleset.DispatchMap {
		out := []nftables.SetElement{{Key: e.Addr.From.AsSlice()}}
		if kind == ruleset.DispatchMap {
			out[0].VerdictData = &expr.Verdict{Kind: expr.VerdictJump, Chain: e.Chain}
		}
		if next := e.Addr.To.Next(); next.IsValid() && next.Is4() == e.Addr.To.Is4() {
			out = append(out, nftables.SetElement{Key: next.AsSlice(), IntervalEnd: true})
		}
		return out
	}
	if kind == ruleset.AddrProtoPortExactSet {
		return []nftables.SetElement{{Key: concatKey(e.Addr.From, e.Proto, e.PortFrom)}}
	}
	if kind == ruleset.ProtoPortSet {
		return []nftables.SetElement{{Key: protoPortKey(e.Proto, e.PortFrom), KeyEnd: protoPortKey(e.Proto, e.PortTo)}}
	}
	if kind == ruleset.ServiceSet {
		return []nftables.SetElement{{
			Key:    append(concatKey(e.Addr.From, e.Proto, e.PortFrom), e.Src.From.AsSlice()...),
			KeyEnd: append(concatKey(e.Addr.To, e.Proto, e.PortTo), e.Src.To.AsSlice()...),
		}}
	}
	return []nftables.SetElement{{
		Key:    concatKey(e.Addr.From, e.Proto, e.PortFrom),
		KeyEnd: concatKey(e.Addr.To, e.Proto, e.PortTo),
	}}
}

// concatKey is addr . proto . port with each field padded to 4 bytes, as the
// kernel lays out concatenations in its registers.
func concatKey(addr netip.Addr, proto uint8, port uint16) []byte {
	key := addr.AsSlice()
	key = append(key, proto, 0, 0, 0)
	key = binary.BigEndian.AppendUint16(key, port)
	return append(key, 0, 0)
}

// protoPortKey is proto . port, each field padded to 4 bytes.
func protoPortKey(proto uint8, port uint16) []byte {
	key := []byte{proto, 0, 0, 0}
	key = binary.BigEndian.AppendUint16(key, port)
	return append(key, 0, 0)
}

// decode turns the elements the kernel lists back into model elements.
func decode(kind ruleset.SetKind, v6 bool, elems []nftables.SetElement) []ruleset.Element {
	addrLen := 4
	if v6 {
		addrLen = 16
	}
	var out []ruleset.Element
	if kind == ruleset.ProtoPortSet {
		for _, el := range elems {
			if len(el.Key) < 8 || len(el.KeyEnd) < 8 {
				continue
			}
			out = append(out, ruleset.Element{Proto: el.Key[0], PortFrom: binary.BigEndian.Uint16(el.Key[4:]), PortTo: binary.BigEndian.Uint16(el.KeyEnd[4:])})
		}
		return out
	}
	if kind == ruleset.ServiceSet {
		for _, el := range elems {
			n := 2*addrLen + 8
			if len(el.Key) < n || len(el.KeyEnd) < n {
				continue
			}
			dst, _ := netip.AddrFromSlice(el.Key[:addrLen])
			from, _ := netip.AddrFromSlice(el.Key[addrLen+8 : n])
			to, _ := netip.AddrFromSlice(el.KeyEnd[addrLen+8 : n])
			port := binary.BigEndian.Uint16(el.Key[addrLen+4:])
			out = append(out, ruleset.Element{
				Addr: cidr.Range{From: dst, To: dst}, Proto: el.Key[addrLen], PortFrom: port, PortTo: port,
				Src: cidr.Range{From: from, To: to},
			})
		}
		return out
	}
	if kind.Concat() {
		for _, el := range elems {
			if kind == ruleset.AddrProtoPortExactSet {
				el.KeyEnd = el.Key
			}
			if len(el.Key) < addrLen+8 || len(el.KeyEnd) < addrLen+8 {
				continue
			}
			from, _ := netip.AddrFromSlice(el.Key[:addrLen])
			to, _ := netip.AddrFromSlice(el.KeyEnd[:addrLen])
			out = append(out, ruleset.Element{
				Addr:     cidr.Range{From: from, To: to},
				Proto:    el.Key[addrLen],
				PortFrom: binary.BigEndian.Uint16(el.Key[addrLen+4:]),
				PortTo:   binary.BigEndian.Uint16(el.KeyEnd[addrLen+4:]),
			})
		}
		return out
	}
	// Plain interval set or map: pair each start with the interval end
	// after it. A range that touches the next one ends where that one
	// starts, so at the same key the end comes first.
	sorted := slices.Clone(elems)
	slices.SortStableFunc(sorted, func(a, b nftables.SetElement) int {
		if c := bytes.Compare(a.Key, b.Key); c != 0 || a.IntervalEnd == b.IntervalEnd {
			return c
		}
		if a.IntervalEnd {
			return -1
		}
		return 1
	})
	for i := 0; i < len(sorted); i++ {
		el := sorted[i]
		if el.IntervalEnd || len(el.Key) != addrLen {
			continue
		}
		from, _ := netip.AddrFromSlice(el.Key)
		to := ruleset.LastAddress(v6)
		if i+1 < len(sorted) && sorted[i+1].IntervalEnd {
			end, _ := netip.AddrFromSlice(sorted[i+1].Key)
			to = end.Prev()
			i++
		}
		e := ruleset.Element{Addr: cidr.Range{From: from, To: to}}
		if kind == ruleset.DispatchMap {
			e.Chain = jumpTarget(el.Val)
		}
		out = append(out, e)
	}
	return out
}

// jumpTarget returns the chain of a verdict as google/nftables lists it in a
// map element's value: the nested verdict code and chain attributes.
func jumpTarget(val []byte) string {
	ad, err := netlink.NewAttributeDecoder(val)
	if err != nil {
		return ""
	}
	for ad.Next() {
		if ad.Type() == unix.NFTA_VERDICT_CHAIN {
			return strings.TrimRight(ad.String(), "\x00")
		}
	}
	return ""
}

// addElements queues elements in chunks that fit into one netlink message.
func addElements(c *nftables.Conn, s *nftables.Set, kind ruleset.SetKind, elems []ruleset.Element) error {
	return chunked(kind, elems, func(batch []nftables.SetElement) error { return c.SetAddElements(s, batch) })
}

// deleteElements queues the removal of elements in chunks.
func deleteElements(c *nftables.Conn, s *nftables.Set, kind ruleset.SetKind, elems []ruleset.Element) error {
	return chunked(kind, elems, func(batch []nftables.SetElement) error { return c.SetDeleteElements(s, batch) })
}

func chunked(kind ruleset.SetKind, elems []ruleset.Element, queue func([]nftables.SetElement) error) error {
	var batch []nftables.SetElement
	for _, e := range elems {
		batch = append(batch, encode(kind, e)...)
		if len(batch) >= ElementsPerMessage {
			if err := queue(batch); err != nil {
				return err
			}
			batch = nil
		}
	}
	if len(batch) > 0 {
		return queue(batch)
	}
	return nil
}
