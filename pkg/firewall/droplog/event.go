package droplog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Event is one logged packet as the receiver prints it.
type Event struct {
	Time time.Time `json:"time"`
	// Action is drop or accept, the first word of the rule's prefix.
	Action string `json:"action"`
	// Context is the rule's log prefix: the verdict, chain and rule.
	Context  string `json:"context"`
	Protocol string `json:"protocol"`
	Source   string `json:"source"`
	// Destination is the destination address.
	Destination     string `json:"destination"`
	SourcePort      uint16 `json:"sourcePort,omitempty"`
	DestinationPort uint16 `json:"destinationPort,omitempty"`
	// ICMPType and ICMPCode are set for ICMP and ICMPv6.
	ICMPType     *uint8 `json:"icmpType,omitempty"`
	ICMPCode     *uint8 `json:"icmpCode,omitempty"`
	InInterface  string `json:"inInterface,omitempty"`
	OutInterface string `json:"outInterface,omitempty"`
	// Length is the packet's length from its IP header.
	Length int `json:"length"`
}

// maxContext bounds the context taken from a prefix (the kernel's own
// bound is 127 bytes).
const maxContext = 128

// maxExtensionHeaders bounds the IPv6 extension headers walked to the
// transport header.
const maxExtensionHeaders = 8

// Protocol numbers.
const (
	protoICMP   = 1
	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
	protoSCTP   = 132
)

// ErrTruncated is returned for a packet shorter than its headers say.
var ErrTruncated = errors.New("packet truncated")

// Decode fills an event from a packet that starts at its IP header and the
// prefix of the rule that logged it. It never panics, whatever the bytes;
// a transport header that is missing or truncated leaves the ports unset.
func Decode(prefix string, packet []byte) (Event, error) {
	e := Event{Context: sanitize(prefix)}
	e.Action, _, _ = strings.Cut(e.Context, " ")
	if len(packet) < 1 {
		return e, ErrTruncated
	}
	var (
		proto     uint8
		transport []byte
	)
	switch packet[0] >> 4 {
	case 4:
		if len(packet) < 20 {
			return e, ErrTruncated
		}
		ihl := int(packet[0]&0x0f) * 4
		if ihl < 20 || len(packet) < ihl {
			return e, fmt.Errorf("IPv4 header length %d: %w", ihl, ErrTruncated)
		}
		e.Length = int(binary.BigEndian.Uint16(packet[2:4]))
		e.Source = netip.AddrFrom4([4]byte(packet[12:16])).String()
		e.Destination = netip.AddrFrom4([4]byte(packet[16:20])).String()
		proto = packet[9]
		// Only the first fragment carries the transport header.
		if binary.BigEndian.Uint16(packet[6:8])&0x1fff == 0 {
			transport = packet[ihl:]
		}
	case 6:
		if len(packet) < 40 {
			return e, ErrTruncated
		}
		e.Length = int(binary.BigEndian.Uint16(packet[4:6])) + 40
		e.Source = netip.AddrFrom16([16]byte(packet[8:24])).String()
		e.Destination = netip.AddrFrom16([16]byte(packet[24:40])).String()
		proto, transport = ipv6Transport(packet[6], packet[40:])
	default:
		return e, fmt.Errorf("IP version %d: not IPv4 or IPv6", packet[0]>>4)
	}
	e.Protocol = protocolName(proto)
	decodeTransport(&e, proto, transport)
	return e, nil
}

// ipv6Transport walks the extension headers to the transport header; nil
// when it is not in the packet (a later fragment, too many headers).
func ipv6Transport(next uint8, rest []byte) (uint8, []byte) {
	for range maxExtensionHeaders {
		switch next {
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if len(rest) < 8 {
				return next, nil
			}
			n := (int(rest[1]) + 1) * 8
			if len(rest) < n {
				return next, nil
			}
			next, rest = rest[0], rest[n:]
		case 44: // fragment
			if len(rest) < 8 {
				return next, nil
			}
			if binary.BigEndian.Uint16(rest[2:4])&0xfff8 != 0 {
				return rest[0], nil // not the first fragment
			}
			next, rest = rest[0], rest[8:]
		default:
			return next, rest
		}
	}
	return next, nil
}

func decodeTransport(e *Event, proto uint8, b []byte) {
	switch proto {
	case protoTCP, protoUDP, protoSCTP:
		if len(b) >= 4 {
			e.SourcePort = binary.BigEndian.Uint16(b[0:2])
			e.DestinationPort = binary.BigEndian.Uint16(b[2:4])
		}
	case protoICMP, protoICMPv6:
		if len(b) >= 2 {
			t, c := b[0], b[1]
			e.ICMPType, e.ICMPCode = &t, &c
		}
	}
}

func protocolName(p uint8) string {
	switch p {
	case protoTCP:
		return "tcp"
	case protoUDP:
		return "udp"
	case protoICMP:
		return "icmp"
	case protoICMPv6:
		return "icmpv6"
	case protoSCTP:
		return "sctp"
	}
	return strconv.Itoa(int(p))
}

// sanitize bounds the prefix and keeps printable ASCII only: it comes from
// the kernel, but the receiver prints it into the shoot's logs.
func sanitize(s string) string {
	s = strings.TrimRight(s, "\x00 ")
	if len(s) > maxContext {
		s = s[:maxContext]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}
