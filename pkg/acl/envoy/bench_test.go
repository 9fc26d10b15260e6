package envoy

import (
	"encoding/json"
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

// BenchmarkHTTPConnectEnvoyFilter shards many shoots with 10 CIDRs each and renders the root and every shard.
func BenchmarkHTTPConnectEnvoyFilter(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 5000} {
		b.Run(fmt.Sprintf("shoots=%d", n), func(b *testing.B) {
			var shoots []ShootPolicy
			for i := range n {
				shoots = append(shoots, NewShootPolicy(fmt.Sprintf("shoot--p--%d", i), &validation.Policy{Action: "ALLOW", Type: "remote_ip", CIDRs: manyCIDRs(10)}, always))
			}
			b.ReportAllocs()
			var shardCount, largest int
			for b.Loop() {
				shards, err := Shards(shoots, ShardBudgetBytes)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := HTTPConnectEnvoyFilter("istio-ingress", nil, shards, HTTPConnectListeners); err != nil {
					b.Fatal(err)
				}
				shardCount = len(shards)
				for _, sh := range shards {
					ef, err := ShardEnvoyFilter("istio-ingress", nil, sh, HTTPConnectListeners)
					if err != nil {
						b.Fatal(err)
					}
					raw, err := json.Marshal(ef)
					if err != nil {
						b.Fatal(err)
					}
					largest = max(largest, len(raw))
				}
			}
			b.ReportMetric(float64(shardCount), "shards")
			b.ReportMetric(float64(largest), "largest-shard-bytes")
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
