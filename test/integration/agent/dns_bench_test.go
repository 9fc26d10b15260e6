package agent_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy/dnsproxytest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// directResolver is dnsmasq's second address: the agent does not redirect
// queries to it, so they reach dnsmasq straight, forwarded by the firewall.
const directResolver = "203.0.113.55"

const dnsBenchConfig = `name: fw-dns-bench
sources:
  static:
    firewall: {internalPrefixes: ["10.0.1.0/24"]}
    cwnp:
      egress:
      - toFQDNs: [{matchPattern: "*.allowed.example.com"}]
        ports: [{port: 443}]
      - to: [{cidr: %s/32}]
        ports: [{protocol: UDP, port: 53}]
controllers:
  firewall: {source: static}
  cwnp: {source: static}
dns: {upstreams: [%s]}
`

// The DNS proxy's figures, printed as tables with BENCH_TABLE=true (make
// bench); nothing here is asserted about time.
var _ = Describe("DNS proxy figures", Label("bench"), func() {
	BeforeEach(func() {
		if os.Getenv("BENCH_TABLE") != "true" {
			Skip("set BENCH_TABLE=true (make bench)")
		}
	})

	It("prints queries/s and latency through the proxy beside the resolver straight", func() {
		t := newTopology()
		for _, a := range []string{resolverV4, directResolver} {
			Expect(t.outside.IP("addr", "add", a+"/24", "dev", "eth0")).To(Succeed())
		}
		// 500 names a selector allows, each with its own address, and 500
		// that none does, asked in turn.
		records := []string{"--address=/example.net/198.19.0.1"}
		var names []string
		for i := range 500 {
			records = append(records, fmt.Sprintf("--host-record=n%d.allowed.example.com,198.18.%d.%d", i, i/250, 1+i%250))
			names = append(names, fmt.Sprintf("n%d.allowed.example.com.", i), fmt.Sprintf("n%d.example.net.", i))
		}
		resolver := dnsmasqOn(t.outside, []string{resolverV4, directResolver}, records...)
		cfgPath := filepath.Join(GinkgoT().TempDir(), "config.yaml")
		writeConfig(cfgPath, fmt.Sprintf(dnsBenchConfig, directResolver, resolverV4))
		agentRun := startAgentProcess(t.fw, cfgPath, "GOMAXPROCS=1")

		By("each name once through the proxy: the allowed names' addresses are in their set")
		for _, name := range names {
			_, err := lookup(t.node, resolverV4, "udp", name, dns.TypeA)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(fqdnSet(t.fw, fwv1alpha1.FQDNSelector{MatchPattern: "*.allowed.example.com"}, false)).To(HaveLen(500))

		const d = 5 * time.Second
		// The CPU time per answered query is what the machine's other work
		// moves least: queries/s per core follow from it.
		rows := [][]string{{"run", "path", "load generator", "answered queries/s", "lost",
			"agent CPU per query", "dnsmasq CPU per query", "agent: queries/s per core"}}
		for round := 1; round <= 2; round++ {
			for _, path := range []struct {
				name, server string
				proxied      bool
			}{
				{"straight to dnsmasq (forwarded by the firewall)", directResolver, false},
				{"through the agent's DNS proxy (redirected) to dnsmasq", resolverV4, true},
			} {
				agentCPU, resolverCPU := cpuSeconds(agentRun.cmd.Process.Pid), cpuSeconds(resolver.Process.Pid)
				start := time.Now()
				res := dnsLoad(t.node, path.server, names, d, 0)
				answered := res.qps * time.Since(start).Seconds()
				agentCPU = (cpuSeconds(agentRun.cmd.Process.Pid) - agentCPU) / answered
				resolverCPU = (cpuSeconds(resolver.Process.Pid) - resolverCPU) / answered
				perCore := "-"
				if path.proxied {
					perCore = fmt.Sprintf("%.0f", 1/agentCPU)
				}
				rows = append(rows, []string{strconv.Itoa(round), path.name, res.tool, fmt.Sprintf("%.0f", res.qps),
					fmt.Sprintf("%.2f %%", 100*res.lost), fmt.Sprintf("%.1f µs", agentCPU*1e6), fmt.Sprintf("%.1f µs", resolverCPU*1e6), perCore})
			}
		}
		printTable(fmt.Sprintf("DNS queries/s, %d s per run, 1,000 names (half allowed by a pattern, repeated answers: no set update)", int(d.Seconds())), rows)

		const rate = 2000
		direct := dnsLoad(t.node, directResolver, names, d, rate)
		proxied := dnsLoad(t.node, resolverV4, names, d, rate)
		rows = [][]string{{"path", "load generator", "answers", "p50", "p99"}}
		for _, r := range []struct {
			name string
			res  loadResult
		}{{"straight to dnsmasq", direct}, {"through the DNS proxy", proxied}} {
			rows = append(rows, []string{r.name, r.res.tool, strconv.Itoa(len(r.res.latencies)),
				ms(percentile(r.res.latencies, 50)), ms(percentile(r.res.latencies, 99))})
		}
		rows = append(rows, []string{"added by the proxy", "", "",
			ms(percentile(proxied.latencies, 50) - percentile(direct.latencies, 50)),
			ms(percentile(proxied.latencies, 99) - percentile(direct.latencies, 99))})
		printTable(fmt.Sprintf("DNS latency at %d queries/s, %d s", rate, int(d.Seconds())), rows)
	})

	It("prints memory and set-update time per answer with 10 and 10,000 FQDN selectors", func() {
		rows := [][]string{{"FQDN selectors", "sets", "apply", "one selector more: apply and proxy", "one selector removed: apply and proxy (2 addresses deleted)", "a selector with a new port list: apply and proxy", "new flow no selector allows (UDP, 20,000 datagrams)",
			"kernel Slab after apply", "agent heap: ruleset and proxy",
			"heap per allowed address", "set update per answer p50 / p99", "answer with update p50 / p99", "repeated answer p50 / p99"}}
		for _, n := range []int{10, 1000, 10000} {
			rows = append(rows, selectorBench(n))
		}
		printTable("FQDN selectors: an answer with 2 new addresses for each selector in turn, asked of the proxy in process (upstream on loopback, sets in a namespace)", rows)
	})
})

// selectorBench applies n selectors, asks the proxy once for a name of each
// (its answer holds two addresses) and then once more, and returns a row.
func selectorBench(n int) []string {
	GinkgoHelper()
	t := newTopology()
	prog := nftables.NewProgrammer(t.fw.Path())
	spec := &fwv1alpha1.PolicySpec{}
	for i := range n {
		if i%100 == 0 {
			spec.Egress = append(spec.Egress, fwv1alpha1.EgressRule{Ports: []fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To(int32(443))}}})
		}
		rule := &spec.Egress[len(spec.Egress)-1]
		rule.ToFQDNs = append(rule.ToFQDNs, fwv1alpha1.FQDNSelector{MatchName: fmt.Sprintf("s%d.bench.example.com", i)})
	}
	heap0 := heapInUse()
	slab0 := slabKB()
	fw := &fwv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.1.0/24"}}
	rs, err := ruleset.Build(fw, []*fwv1alpha1.PolicySpec{spec}, nil)
	Expect(err).NotTo(HaveOccurred())
	start := time.Now()
	_, err = prog.Apply(rs)
	Expect(err).NotTo(HaveOccurred())
	apply := time.Since(start)
	slab1 := slabKB()
	Expect(rs.FQDNSelectors()).To(HaveLen(n))
	sets := 0
	for _, s := range rs.Sets {
		if s.Kind == ruleset.FQDNSet {
			sets++
		}
	}
	// A new flow that no selector allows walks the fqdn chain: a set lookup
	// per port list.
	flow := newFlowCost(t)

	upstream, err := dnsproxytest.Start("127.0.0.1:0", func(q *dns.Msg, tcp bool) [][]byte {
		var i int
		_, _ = fmt.Sscanf(q.Question[0].Name, "s%d.", &i)
		return dnsproxytest.Answer(
			fmt.Sprintf("%s 300 IN A 100.64.%d.%d", q.Question[0].Name, i/250, 1+i%250),
			fmt.Sprintf("%s 300 IN A 100.65.%d.%d", q.Question[0].Name, i/250, 1+i%250))(q, tcp)
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(upstream.Close)
	obs := &updateTimes{}
	p := dnsproxy.New(dnsproxy.Options{
		Upstreams: []netip.AddrPort{netip.MustParseAddrPort(upstream.Addr)}, Listen: "127.0.0.1:0",
		TTLFloor: time.Minute, Grace: time.Minute,
		Bounds:  dnsproxy.Bounds{AddressesPerName: 64, NamesPerSelector: 1024, Addresses: 200000},
		Updater: prog, Observer: obs,
	})
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	go func() { _ = p.Run(ctx) }()
	Expect(p.Addrs()).NotTo(BeEmpty())
	Expect(p.SetSelectors(rs.FQDN)).To(Succeed())
	heap1 := heapInUse()

	ask := func() []time.Duration {
		c := &dns.Client{Timeout: 5 * time.Second}
		var out []time.Duration
		for i := range n {
			q := new(dns.Msg).SetQuestion(fmt.Sprintf("s%d.bench.example.com.", i), dns.TypeA)
			start := time.Now()
			resp, _, err := c.Exchange(q, p.Addrs()[0].String())
			out = append(out, time.Since(start))
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Answer).To(HaveLen(2))
		}
		return out
	}
	first := ask()
	repeated := ask()
	heap2 := heapInUse()
	Expect(obs.times()).To(HaveLen(n), "one set update per answer with new addresses, none for a repeated one")
	Expect(fqdnAddresses(prog)).To(Equal(2 * n))

	By("one selector more, then the first one removed: what a policy change costs, the proxy's part included")
	policyChange := func(changed *fwv1alpha1.PolicySpec) string {
		GinkgoHelper()
		built, err := ruleset.Build(fw, []*fwv1alpha1.PolicySpec{changed}, nil)
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		res, err := prog.Apply(built)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.SetSelectors(built.FQDN)).To(Succeed())
		return fmt.Sprintf("%.3f s (%s)", time.Since(start).Seconds(), res.Mode)
	}
	more := spec.DeepCopy()
	more.Egress[len(more.Egress)-1].ToFQDNs = append(more.Egress[len(more.Egress)-1].ToFQDNs, fwv1alpha1.FQDNSelector{MatchName: "one-more.bench.example.com"})
	added := policyChange(more)
	less := more.DeepCopy()
	less.Egress[0].ToFQDNs = less.Egress[0].ToFQDNs[1:]
	removed := policyChange(less)
	Expect(fqdnAddresses(prog)).To(Equal(2*n-2), "the removed selector's two addresses are deleted")
	port80 := less.DeepCopy()
	port80.Egress = append(port80.Egress, fwv1alpha1.EgressRule{Ports: []fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To(int32(80))}},
		ToFQDNs: []fwv1alpha1.FQDNSelector{{MatchName: "port80.bench.example.com"}}})
	newPorts := policyChange(port80)
	Expect(fqdnAddresses(prog)).To(Equal(2*n-2), "the table replaced, the addresses carried over")
	runtime.KeepAlive(rs)
	runtime.KeepAlive(p)

	// Per address only where the addresses outweigh the heap's granularity.
	perAddress := "-"
	if n >= 1000 {
		perAddress = fmt.Sprintf("%.0f B", float64(heap2-heap1)/float64(2*n))
	}
	pair := func(ds []time.Duration) string { return ms(percentile(ds, 50)) + " / " + ms(percentile(ds, 99)) }
	updates := obs.times()[:n]
	return []string{strconv.Itoa(n), strconv.Itoa(sets), fmt.Sprintf("%.3f s", apply.Seconds()), added, removed, newPorts,
		fmt.Sprintf("%.1f µs", float64(flow.Nanoseconds())/1000),
		fmt.Sprintf("+%.1f MiB", float64(slab1-slab0)/1024), fmt.Sprintf("%.1f MiB", float64(heap1-heap0)/(1<<20)),
		perAddress, pair(updates), pair(first), pair(repeated)}
}

// fqdnAddresses counts the elements of the programmer's FQDN sets.
func fqdnAddresses(prog *nftables.Programmer) int {
	GinkgoHelper()
	sets, err := prog.ReadFQDNSets()
	Expect(err).NotTo(HaveOccurred())
	count := 0
	for _, s := range sets {
		count += len(s.Elements)
	}
	return count
}

// updateTimes records how long each set update took.
type updateTimes struct {
	mu   sync.Mutex
	ds   []time.Duration
	errs []error
}

func (u *updateTimes) ObserveDNSQuery(string, string)          {}
func (u *updateTimes) ObserveDNSUpstream(time.Duration, error) {}
func (u *updateTimes) ObserveFQDNBound(string)                 {}
func (u *updateTimes) ObserveFQDNAllowed(int, int)             {}
func (u *updateTimes) ObserveFQDNUpdate(_ int, d time.Duration, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ds = append(u.ds, d)
	if err != nil {
		u.errs = append(u.errs, err)
	}
}

// times returns the update times, and fails the spec if an update failed.
func (u *updateTimes) times() []time.Duration {
	GinkgoHelper()
	u.mu.Lock()
	defer u.mu.Unlock()
	Expect(u.errs).To(BeEmpty())
	return u.ds
}

// heapInUse is the Go heap in use after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// slabKB is the kernel's slab memory (the whole machine's: other work moves
// it too, so only the sets' large share is reported, not the elements').
func slabKB() int64 {
	GinkgoHelper()
	raw, err := os.ReadFile("/proc/meminfo")
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Slab:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			Expect(err).NotTo(HaveOccurred())
			return kb
		}
	}
	Fail("no Slab in /proc/meminfo")
	return 0
}
