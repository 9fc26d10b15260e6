package dnsproxy_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy/dnsproxytest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// recorder stands in for the kernel: it takes the elements of the sets it
// knows, and can hold each update until the test lets it go.
type recorder struct {
	mu    sync.Mutex
	elems []nftables.FQDNElement
	calls int
	sets  map[string]bool
	gate  chan struct{}
}

func (r *recorder) UpdateFQDN(elems []nftables.FQDNElement) (int, error) {
	r.mu.Lock()
	gate := r.gate
	r.mu.Unlock()
	if gate != nil {
		<-gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	skipped := 0
	for _, e := range elems {
		if r.sets != nil && !r.sets[e.Set] {
			skipped++
			continue
		}
		r.elems = append(r.elems, e)
	}
	return skipped, nil
}

func (r *recorder) updates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// hold makes the updates wait until the returned channel is closed.
func (r *recorder) hold() chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gate = make(chan struct{})
	return r.gate
}

// elem returns the i-th element written.
func (r *recorder) elem(i int) nftables.FQDNElement {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.elems[i]
}

// written returns the addresses written per set, sorted.
func (r *recorder) written() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for _, e := range r.elems {
		if !e.Delete && !slices.Contains(out[e.Set], e.Addr.String()) {
			out[e.Set] = append(out[e.Set], e.Addr.String())
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// deleted returns the addresses deleted per set, in order.
func (r *recorder) deleted() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for _, e := range r.elems {
		if e.Delete {
			out[e.Set] = append(out[e.Set], e.Addr.String())
		}
	}
	return out
}

// observer counts what the proxy reports.
type observer struct {
	mu      sync.Mutex
	results map[string]int
	bounds  map[string]int
}

func (o *observer) ObserveDNSQuery(_, result string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.results[result]++
}
func (o *observer) ObserveDNSUpstream(time.Duration, error)     {}
func (o *observer) ObserveFQDNUpdate(int, time.Duration, error) {}
func (o *observer) ObserveFQDNBound(b string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bounds[b]++
}
func (o *observer) ObserveFQDNAllowed(int, int) {}

func (o *observer) bound(b string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bounds[b]
}

func sel(s fwv1alpha1.FQDNSelector) fqdn.Selector { return fqdn.FromAPI(s) }

// base is the set of a selector alone, as the tests bind each selector
// unless they share sets on purpose.
func base(s fwv1alpha1.FQDNSelector) string {
	sum := sha256.Sum256([]byte(sel(s).Key()))
	return "fqdn_" + hex.EncodeToString(sum[:8])
}

func set(s fwv1alpha1.FQDNSelector, v6 bool) string { return ruleset.FQDNSetName(base(s), v6) }

// bindings binds each selector to a set of its own.
func bindings(selectors ...fwv1alpha1.FQDNSelector) []ruleset.FQDNBinding {
	var out []ruleset.FQDNBinding
	for _, s := range selectors {
		out = append(out, ruleset.FQDNBinding{Selector: sel(s), Sets: []string{base(s)}})
	}
	return out
}

type fixture struct {
	upstream *dnsproxytest.Server
	proxy    *dnsproxy.Proxy
	rec      *recorder
	obs      *observer
	addr     string
}

var defaultBounds = dnsproxy.Bounds{AddressesPerName: 64, NamesPerSelector: 1024, Addresses: 200000}

// start runs an upstream answering with reply and a proxy enforcing
// selectors in front of it, on the loopback.
func start(reply dnsproxytest.Reply, bounds dnsproxy.Bounds, selectors ...fwv1alpha1.FQDNSelector) *fixture {
	GinkgoHelper()
	f := &fixture{rec: &recorder{}, obs: &observer{results: map[string]int{}, bounds: map[string]int{}}}
	var err error
	f.upstream, err = dnsproxytest.Start("127.0.0.1:0", reply)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(f.upstream.Close)
	f.proxy = dnsproxy.New(dnsproxy.Options{
		Upstreams: []netip.AddrPort{netip.MustParseAddrPort(f.upstream.Addr)}, Listen: "127.0.0.1:0",
		TTLFloor: 10 * time.Second, Grace: 5 * time.Second, Bounds: bounds, UpstreamTimeout: 300 * time.Millisecond,
		Updater: f.rec, Observer: f.obs,
	})
	Expect(f.proxy.SetSelectors(bindings(selectors...))).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.proxy.Run(ctx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done).Should(Receive(BeNil()))
	})
	listening := f.proxy.Addrs()
	Expect(listening).To(HaveLen(2))
	f.addr = listening[0].String()
	return f
}

// ask sends a query through the proxy; net is udp or tcp.
func (f *fixture) ask(net, name string, qtype uint16) *dns.Msg {
	GinkgoHelper()
	q := new(dns.Msg).SetQuestion(name, qtype)
	c := &dns.Client{Net: net, Timeout: 3 * time.Second, UDPSize: 1232}
	if net == "udp" {
		q.SetEdns0(1232, false)
	}
	resp, _, err := c.Exchange(q, f.addr)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Id).To(Equal(q.Id), "the client gets its own ID back")
	return resp
}

// addrs lists the A and AAAA addresses of an answer section.
func addrs(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		switch r := rr.(type) {
		case *dns.A:
			out = append(out, r.A.String())
		case *dns.AAAA:
			out = append(out, r.AAAA.String())
		}
	}
	return out
}
