package droplog_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/droplog"
)

var _ = Describe("Decode", func() {
	It("reads an IPv4 TCP packet's addresses, ports and the rule's context", func() {
		e, err := droplog.Decode("drop forward default-deny", ipv4("10.0.0.5", "192.0.2.7", 6, ports(40000, 443)))
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Action).To(Equal("drop"))
		Expect(e.Context).To(Equal("drop forward default-deny"))
		Expect(e.Protocol).To(Equal("tcp"))
		Expect(e.Source).To(Equal("10.0.0.5"))
		Expect(e.Destination).To(Equal("192.0.2.7"))
		Expect(e.SourcePort).To(Equal(uint16(40000)))
		Expect(e.DestinationPort).To(Equal(uint16(443)))
		Expect(e.Length).To(Equal(28))
	})

	It("walks IPv6 extension headers to the UDP ports", func() {
		hopByHop := append([]byte{17, 0}, make([]byte, 6)...)
		e, err := droplog.Decode("accept forward new-connection", ipv6("2001:db8::1", "2001:db8::2", 0, append(hopByHop, ports(5353, 53)...)))
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Action).To(Equal("accept"))
		Expect(e.Protocol).To(Equal("udp"))
		Expect(e.Source).To(Equal("2001:db8::1"))
		Expect(e.Destination).To(Equal("2001:db8::2"))
		Expect(e.DestinationPort).To(Equal(uint16(53)))
	})

	It("gives ICMP's type and code instead of ports", func() {
		e, err := droplog.Decode("drop forward default-deny", ipv4("10.0.0.5", "192.0.2.7", 1, []byte{8, 0, 0, 0}))
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Protocol).To(Equal("icmp"))
		Expect(*e.ICMPType).To(Equal(uint8(8)))
		Expect(*e.ICMPCode).To(Equal(uint8(0)))
		Expect(e.DestinationPort).To(BeZero())
	})

	It("leaves the ports of a later IPv4 fragment unset", func() {
		p := ipv4("10.0.0.5", "192.0.2.7", 17, ports(1, 2))
		p[6], p[7] = 0, 10 // fragment offset 80 bytes
		e, err := droplog.Decode("drop", p)
		Expect(err).NotTo(HaveOccurred())
		Expect(e.DestinationPort).To(BeZero())
	})

	It("refuses truncated headers and other IP versions with an error", func() {
		_, err := droplog.Decode("drop", ipv4("10.0.0.5", "192.0.2.7", 6, nil)[:19])
		Expect(err).To(MatchError(droplog.ErrTruncated))
		_, err = droplog.Decode("drop", ipv6("::1", "::2", 6, nil)[:39])
		Expect(err).To(MatchError(droplog.ErrTruncated))
		_, err = droplog.Decode("drop", []byte{0x50, 0, 0, 0})
		Expect(err).To(MatchError(ContainSubstring("IP version 5")))
		bad := ipv4("10.0.0.5", "192.0.2.7", 6, nil)
		bad[0] = 0x4f // 60-byte header in a 20-byte packet
		_, err = droplog.Decode("drop", bad)
		Expect(err).To(MatchError(droplog.ErrTruncated))
	})

	It("keeps the context printable and bounded", func() {
		e, _ := droplog.Decode("drop\x1b[31m"+strings.Repeat("x", 300)+"\x00", ipv4("10.0.0.5", "192.0.2.7", 6, ports(1, 2)))
		Expect(e.Context).To(HavePrefix("drop?[31m"))
		Expect(len(e.Context)).To(Equal(128))
	})
})
