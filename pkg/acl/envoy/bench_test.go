package envoy

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

func manyCIDRs(n int) []netip.Prefix {
	out := make([]netip.Prefix, 0, n)
	for i := range n {
		out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{11, byte(i >> 8), byte(i), 0}), 24))
	}
	return out
}

// BenchmarkShootEnvoyFilter renders one shoot's EnvoyFilter (two hosts) with the default maximum of CIDRs.
func BenchmarkShootEnvoyFilter(b *testing.B) {
	s := NewShootPolicy("shoot--p--a", &validation.Policy{Action: "ALLOW", Type: "remote_ip", CIDRs: manyCIDRs(validation.DefaultMaxCIDRs)}, always)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ShootEnvoyFilter("istio-ingress", nil, []string{"a", "b"}, s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHTTPConnectEnvoyFilter renders the shared filter for many shoots with 10 CIDRs each.
func BenchmarkHTTPConnectEnvoyFilter(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("shoots=%d", n), func(b *testing.B) {
			var shoots []ShootPolicy
			for i := range n {
				shoots = append(shoots, NewShootPolicy(fmt.Sprintf("shoot--p--%d", i), &validation.Policy{Action: "ALLOW", Type: "remote_ip", CIDRs: manyCIDRs(10)}, always))
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := HTTPConnectEnvoyFilter("istio-ingress", nil, shoots); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSubtract cuts the always-allowed CIDRs out of a large DENY list.
func BenchmarkSubtract(b *testing.B) {
	from := manyCIDRs(validation.DefaultMaxCIDRs)
	b.ReportAllocs()
	for b.Loop() {
		cidr.Subtract(from, always)
	}
}
