package droplog_test

import (
	"encoding/binary"
	"net/netip"
)

// ipv4 builds an IPv4 header (no options) with the transport bytes.
func ipv4(src, dst string, proto uint8, transport []byte) []byte {
	b := make([]byte, 20, 20+len(transport))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:4], uint16(20+len(transport)))
	b[8], b[9] = 64, proto
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(b[12:16], s[:])
	copy(b[16:20], d[:])
	return append(b, transport...)
}

// ipv6 builds an IPv6 header with the next header and the rest.
func ipv6(src, dst string, next uint8, rest []byte) []byte {
	b := make([]byte, 40, 40+len(rest))
	b[0] = 0x60
	binary.BigEndian.PutUint16(b[4:6], uint16(len(rest)))
	b[6], b[7] = next, 64
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	copy(b[8:24], s[:])
	copy(b[24:40], d[:])
	return append(b, rest...)
}

// ports is the first 8 bytes of a TCP or UDP header.
func ports(src, dst uint16) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint16(b[0:2], src)
	binary.BigEndian.PutUint16(b[2:4], dst)
	return b
}
