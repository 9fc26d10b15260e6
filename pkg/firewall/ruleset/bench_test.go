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
// for the policies with one item's CIDR changed (every other iteration
// changes it back), built from scratch by Build (full) and by a Builder that
// built the previous state (incremental), as the agent does.
func BenchmarkBuildOneCIDR(b *testing.B) {
	b.Run("full", func(b *testing.B) {
		benchShapes(b, func(b *testing.B, spec *fwv1alpha1.PolicySpec) {
			specs := [2][]*fwv1alpha1.PolicySpec{{rulesettest.OneCIDRChanged(spec, false)}, {rulesettest.OneCIDRChanged(spec, true)}}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := ruleset.Build(benchFW, specs[i%2], nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("incremental", func(b *testing.B) {
		benchShapes(b, func(b *testing.B, spec *fwv1alpha1.PolicySpec) {
			specs := [2][]*fwv1alpha1.PolicySpec{{rulesettest.OneCIDRChanged(spec, false)}, {rulesettest.OneCIDRChanged(spec, true)}}
			builder := &ruleset.Builder{}
			if _, err := builder.Build(benchFW, specs[1], nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := builder.Build(benchFW, specs[i%2], nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkBuildFull is the Go side of the first apply: everything from
// scratch, by Build and by an empty Builder (the agent's start).
func BenchmarkBuildFull(b *testing.B) {
	b.Run("Build", func(b *testing.B) {
		benchShapes(b, func(b *testing.B, spec *fwv1alpha1.PolicySpec) {
			for b.Loop() {
				if _, err := ruleset.Build(benchFW, []*fwv1alpha1.PolicySpec{spec}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("Builder", func(b *testing.B) {
		benchShapes(b, func(b *testing.B, spec *fwv1alpha1.PolicySpec) {
			for b.Loop() {
				if _, err := (&ruleset.Builder{}).Build(benchFW, []*fwv1alpha1.PolicySpec{spec}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
