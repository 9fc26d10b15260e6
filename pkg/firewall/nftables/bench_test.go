package nftables_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset/rulesettest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
)

// The benchmarks need root (a network namespace per run) and skip otherwise.
// `make bench` runs the spec labelled bench, which prints the figures as a
// table beside the baseline.

var benchSizes = []int{100, 1000, 5000, 20000}

func benchNS(tb testing.TB) *netns.NS {
	tb.Helper()
	if !roottest.IsRoot() {
		tb.Skip("needs root to create network namespaces")
	}
	ns, err := netns.New(fmt.Sprintf("fwa-bench-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ns.Delete() })
	return ns
}

// buildFn makes the ruleset of one policy spec.
type buildFn func(tb testing.TB, spec *fwv1alpha1.PolicySpec) *ruleset.Ruleset

// fullBuild builds from scratch with ruleset.Build, as the agent did before
// it had a Builder.
func fullBuild(tb testing.TB, spec *fwv1alpha1.PolicySpec) *ruleset.Ruleset {
	rs, err := ruleset.Build(fw, []*fwv1alpha1.PolicySpec{spec}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return rs
}

// with builds with b, as the agent does: incrementally after the first.
func with(b *ruleset.Builder) buildFn {
	return func(tb testing.TB, spec *fwv1alpha1.PolicySpec) *ruleset.Ruleset {
		rs, err := b.Build(fw, []*fwv1alpha1.PolicySpec{spec}, nil)
		if err != nil {
			tb.Fatal(err)
		}
		return rs
	}
}

// fullApply builds (with an empty Builder) and applies n items into a
// namespace without the table: what the agent does on start.
func fullApply(tb testing.TB, ns *netns.NS, p *nftables.Programmer, spec *fwv1alpha1.PolicySpec) time.Duration {
	tb.Helper()
	if _, err := ns.Exec("nft", "delete table inet "+ruleset.TableName); err != nil && !strings.Contains(err.Error(), "No such file") {
		tb.Fatal(err)
	}
	start := time.Now()
	res, err := p.Apply(with(&ruleset.Builder{})(tb, spec))
	if err != nil {
		tb.Fatal(err)
	}
	if res.Mode != nftables.Full {
		tb.Fatalf("mode %s, want full", res.Mode)
	}
	return time.Since(start)
}

// oneCIDRUpdate builds (with build) and applies spec with its first CIDR
// changed, then changes it back: what the agent does when one policy
// changes.
func oneCIDRUpdate(tb testing.TB, p *nftables.Programmer, build buildFn, spec *fwv1alpha1.PolicySpec, i int) time.Duration {
	tb.Helper()
	changed := rulesettest.OneCIDRChanged(spec, i%2 == 0)
	start := time.Now()
	res, err := p.Apply(build(tb, changed))
	if err != nil {
		tb.Fatal(err)
	}
	// One network on the item's ports: one element per port replaced.
	if n := len(spec.Egress[0].Ports); res.Mode != nftables.Elements || res.Added != n || res.Deleted != n {
		tb.Fatalf("got %+v, want %d elements replaced", res, n)
	}
	lastNetlink = res.Duration
	return time.Since(start)
}

// lastNetlink is the netlink part (Apply without Build) of the last update.
var lastNetlink time.Duration

func BenchmarkFullApply(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			ns := benchNS(b)
			p := nftables.NewProgrammer(ns.Path())
			spec := policies(n)
			var total time.Duration
			for range b.N {
				total += fullApply(b, ns, p, spec)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/apply")
		})
	}
}

func BenchmarkOneCIDRUpdate(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			ns := benchNS(b)
			p := nftables.NewProgrammer(ns.Path())
			spec := policies(n)
			fullApply(b, ns, p, spec)
			// The agent's Builder knows what is applied.
			build := with(&ruleset.Builder{})
			build(b, spec)
			// Start from the changed state, so every iteration changes one CIDR.
			oneCIDRUpdate(b, p, build, spec, 0)
			b.ResetTimer()
			for i := range b.N {
				oneCIDRUpdate(b, p, build, spec, i+1)
			}
		})
	}
}

// baselineApply loads the baseline with nft -f into ns, giving up after limit.
func baselineApply(tb testing.TB, ns *netns.NS, spec *fwv1alpha1.PolicySpec, limit time.Duration) (time.Duration, bool) {
	tb.Helper()
	file := filepath.Join(tb.TempDir(), "baseline.nft")
	if err := os.WriteFile(file, []byte(rulesettest.Baseline(spec)), 0o600); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns.Name, "nft", "-f", file).CombinedOutput()
	d := time.Since(start)
	if ctx.Err() != nil {
		return d, false
	}
	if err != nil {
		tb.Fatalf("nft -f: %v: %s", err, out)
	}
	return d, true
}

// The apply table prints the apply figures beside the baseline. It runs only
// with BENCH_TABLE=true (make bench), as root.
var _ = Describe("apply figures", Label("bench"), func() {
	It("prints the apply table", func() {
		if os.Getenv("BENCH_TABLE") != "true" {
			Skip("set BENCH_TABLE=true (make bench)")
		}
		printBenchTable(GinkgoTB())
	})
})

func printBenchTable(t testing.TB) {
	limit := 60 * time.Second
	if s := os.Getenv("BENCH_BASELINE_LIMIT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		limit = d
	}
	const runs = 5
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	// Updates are reported as "CIDR changed / changed back": the first
	// replaces a /32 (hash set) by a /24 (an interval set shard), the
	// second removes the /24 from its shard again, which costs the kernel
	// more (pipapo looks the element up by walking the shard).
	pair := func(ds [2][]time.Duration) string {
		return fmt.Sprintf("%.1f / %.1f ms", float64(median(ds[0]).Microseconds())/1000, float64(median(ds[1]).Microseconds())/1000)
	}

	rows := [][]string{{"item shape", "policy items", "set elements", "shards (v4 egress)", "agent: full apply", "agent: one-CIDR update (changed / back)", "of which netlink",
		"baseline: rule per item, nft -f"}}
	for _, wide := range []bool{false, true} {
		shape := "1 network, 1 port"
		if wide {
			shape = "2 networks, 2 ports"
		}
		gaveUp := false
		for _, n := range benchSizes {
			spec := policiesOfShape(n, wide)
			ns := benchNS(t)
			p := nftables.NewProgrammer(ns.Path())
			var (
				full                []time.Duration
				update, netlinkPart [2][]time.Duration
			)
			for range runs {
				full = append(full, fullApply(t, ns, p, spec))
			}
			// Every update changes one CIDR, back and forth, built by the
			// agent's Builder, which knows the applied state.
			build := with(&ruleset.Builder{})
			build(t, spec)
			for k := range 4 * runs {
				d := oneCIDRUpdate(t, p, build, spec, k)
				update[k%2] = append(update[k%2], d)
				netlinkPart[k%2] = append(netlinkPart[k%2], lastNetlink)
			}
			elems, shards := 0, 0
			for _, s := range fullBuild(t, spec).Sets {
				if s.Kind != ruleset.DispatchMap {
					elems += len(s.Elements)
				} else if s.Name == ruleset.DispatchName(ruleset.SetEgress, false) {
					shards = len(s.Elements)
				}
			}
			base := fmt.Sprintf("> %d s (not run: smaller size already over)", int(limit.Seconds()))
			if !gaveUp {
				if d, ok := baselineApply(t, benchNS(t), spec, limit); ok {
					base = ms(d)
				} else {
					base, gaveUp = fmt.Sprintf("> %d s (gave up)", int(limit.Seconds())), true
				}
			}
			rows = append(rows, []string{shape, fmt.Sprint(n), fmt.Sprint(elems), fmt.Sprint(shards), ms(median(full)), pair(update), pair(netlinkPart), base})
		}
	}
	fmt.Printf("\nfirewall-agent apply benchmark: median of %d full applies and of %d one-CIDR updates each way (build + netlink),\n"+
		"the agent building incrementally (ruleset.Builder);\n"+
		"baseline = the same items as one rule each with anonymous sets, loaded with nft -f once (limit %s)\n\n", runs, 2*runs, limit)
	for i, r := range rows {
		fmt.Printf("| %s |\n", strings.Join(r, " | "))
		if i == 0 {
			fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|")
		}
	}
	fmt.Println()
}
