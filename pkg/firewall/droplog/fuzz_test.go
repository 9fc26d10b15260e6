package droplog_test

import (
	"net/netip"
	"testing"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/droplog"
)

// FuzzDecode feeds the decoder arbitrary packets: it never panics, and what
// it decodes names real addresses and a bounded, printable context.
func FuzzDecode(f *testing.F) {
	f.Add("drop forward default-deny", ipv4("10.0.0.5", "192.0.2.7", 6, ports(40000, 443)))
	f.Add("accept", ipv6("2001:db8::1", "2001:db8::2", 44, append([]byte{17, 0, 0, 0, 0, 0, 0, 0}, ports(1, 53)...)))
	f.Add("", ipv6("::1", "::2", 60, []byte{0, 255, 0, 0}))
	f.Add("x", []byte{0x4f})
	f.Fuzz(func(t *testing.T, prefix string, packet []byte) {
		e, err := droplog.Decode(prefix, packet)
		if len(e.Context) > 128 {
			t.Fatalf("context of %d bytes", len(e.Context))
		}
		for _, r := range e.Context {
			if r < 0x20 || r > 0x7e {
				t.Fatalf("unprintable %q in the context", r)
			}
		}
		if err != nil {
			return
		}
		if _, perr := netip.ParseAddr(e.Source); perr != nil {
			t.Fatalf("source %q: %v", e.Source, perr)
		}
		if _, perr := netip.ParseAddr(e.Destination); perr != nil {
			t.Fatalf("destination %q: %v", e.Destination, perr)
		}
	})
}
