package ruleset_test

import (
	"fmt"
	"testing"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset/rulesettest"
)

var benchFW = &fwv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.1.0/24", "fd00:1::/64"}}

func benchShapes(b *testing.B, run func(b *testing.B, spec *fwv1alpha1.PolicySpec)) {
	for _, wide := range []bool{false, true} {
		for _, n := range []int{1000, 20000} {
			shape := "narrow"
			if wide {
				shape = "wide"
			}
			b.Run(fmt.Sprintf("%s/items=%d", shape, n), func(b *testing.B) {
				run(b, rulesettest.Policies(n, wide))
			})
		}
	}
}

// BenchmarkBuildOneCIDR is the Go side of a one-CIDR update: the ruleset
// built from scratch with one item's CIDR changed (every other iteration
// changes it back).
func BenchmarkBuildOneCIDR(b *testing.B) {
	benchShapes(b, func(b *testing.B, spec *fwv1alpha1.PolicySpec) {
		specs := [2][]*fwv1alpha1.PolicySpec{{rulesettest.OneCIDRChanged(spec, false)}, {rulesettest.OneCIDRChanged(spec, true)}}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := ruleset.Build(benchFW, specs[i%2], nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
