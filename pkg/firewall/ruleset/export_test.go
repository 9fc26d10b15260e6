package ruleset

import (
	"net/netip"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Layouts are a Builder's shard layouts by direction and family.
type Layouts = [2][2]shardLayout

// Layouts returns the shard layouts b builds with.
func (b *Builder) Layouts() Layouts {
	var out Layouts
	for d := range b.dirs {
		for f := range b.dirs[d].fams {
			out[d][f] = b.dirs[d].fams[f].layout
		}
	}
	return out
}

// BuildWith builds as Build does, with the given layouts.
func BuildWith(fw *fwv1alpha1.FirewallTrafficSpec, policies []*fwv1alpha1.PolicySpec, services []ServiceAllow, layouts Layouts) (*Ruleset, error) {
	var ptrs [2][2]*shardLayout
	for d := range layouts {
		for f := range layouts[d] {
			ptrs[d][f] = &layouts[d][f]
		}
	}
	return buildWith(fw, policies, services, ptrs)
}

// SetShardTarget makes shards of at most n elements until restore is called.
func SetShardTarget(n int) (restore func()) {
	shardTarget = n
	return func() { shardTarget = ShardTarget }
}

// Bounds returns the bounds of a fresh layout of elements (sorted).
func Bounds(elements []Element) []netip.Addr { return layOut(elements).bounds }

// SplitPoint is splitPoint.
func SplitPoint(a, b netip.Addr) netip.Addr { return splitPoint(a, b) }
