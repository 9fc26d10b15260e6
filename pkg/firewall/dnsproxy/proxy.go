package dnsproxy

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// Updater writes allowed addresses into the kernel's FQDN sets and returns
// once they are in force; *nftables.Programmer is one.
type Updater interface {
	UpdateFQDN(elems []nftables.FQDNElement) (skipped int, err error)
}

// Observer records what the proxy does; *metrics.Metrics is one. Its
// methods must accept a nil receiver.
type Observer interface {
	ObserveDNSQuery(transport, result string)
	ObserveDNSUpstream(d time.Duration, err error)
	ObserveFQDNUpdate(elements int, d time.Duration, err error)
	ObserveFQDNBound(bound string)
	ObserveFQDNAllowed(selectors, addresses int)
}

// Results of a query, as the observer is told them.
const (
	ResultAnswered = "answered"
	ResultServFail = "servfail"
	ResultRefused  = "refused"
)

// Options configure a Proxy.
type Options struct {
	// Upstreams are the resolvers, asked in order.
	Upstreams []netip.AddrPort
	// Listen is the address to listen on, UDP and TCP, e.g. ":10053".
	Listen string
	// Devices, when set, are the interfaces to listen on, each with sockets
	// bound to it (SO_BINDTODEVICE). On a metal-stack firewall the agent
	// runs in the default route's VRF, where an unbound socket is bound to
	// that VRF, and a query redirected in the tenant VRF reaches only a
	// socket bound to the tenant VRF's device. Empty: sockets bound to none.
	Devices []string
	// TTLFloor and Grace make an answer's TTL the time its addresses stay
	// allowed: max(TTL, TTLFloor) + Grace.
	TTLFloor, Grace time.Duration
	Bounds          Bounds
	// UpstreamTimeout is how long one resolver is waited for; 2s if 0.
	UpstreamTimeout time.Duration
	Updater         Updater
	Observer        Observer
	Log             *slog.Logger
}

// Proxy is the DNS proxy. Create it with New, give it its selectors
// (Restore, SetSelectors) and Run it.
type Proxy struct {
	opts      Options
	upstreams upstreams
	allowed   *allowed
	ready     chan struct{}
	// refreshes are the refreshes of answers already released.
	refreshes chan refresh
	mu        sync.Mutex
	addrs     []net.Addr
}

// New returns a proxy that enforces no selector yet.
func New(opts Options) *Proxy {
	if opts.UpstreamTimeout <= 0 {
		opts.UpstreamTimeout = 2 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Observer == nil {
		opts.Observer = noObserver{}
	}
	return &Proxy{
		opts:      opts,
		upstreams: upstreams{addrs: opts.Upstreams, timeout: opts.UpstreamTimeout},
		allowed:   newAllowed(),
		ready:     make(chan struct{}),
		refreshes: make(chan refresh, 256),
	}
}

// Restore starts from what the kernel's FQDN sets hold (after a restart):
// their selectors and addresses, until SetSelectors says otherwise.
func (p *Proxy) Restore(sets []nftables.FQDNSetContent) {
	p.allowed.restore(sets, time.Now())
	p.observeAllowed()
}

// SetSelectors makes bindings the enforced selectors and the sets their
// addresses go to: those of the ruleset just applied, whose sets exist. It
// deletes from the sets the addresses no selector allows any more (a
// removed selector's, unless another selector of its set allows them too),
// and returns once the kernel has done so.
func (p *Proxy) SetSelectors(bindings []ruleset.FQDNBinding) error {
	start := time.Now()
	written := 0
	err := p.allowed.setSelectors(bindings, start, func(elems []nftables.FQDNElement) error {
		written = len(elems)
		_, err := p.opts.Updater.UpdateFQDN(elems)
		return err
	})
	if written > 0 {
		p.opts.Observer.ObserveFQDNUpdate(written, time.Since(start), err)
	}
	p.observeAllowed()
	return err
}

// Status returns what the proxy allows for sel now, listing at most limit
// addresses; Enforced is false when sel is not among its selectors.
func (p *Proxy) Status(sel fqdn.Selector, limit int) SelectorStatus {
	return p.allowed.status(sel, time.Now(), limit)
}

// Addrs returns the UDP and TCP addresses the proxy listens on, once Run
// listens; none if it could not.
func (p *Proxy) Addrs() []net.Addr {
	<-p.ready
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addrs
}

// Run listens and serves until ctx is done. It fails when it cannot listen.
func (p *Proxy) Run(ctx context.Context) error {
	devices := p.opts.Devices
	if len(devices) == 0 {
		devices = []string{""}
	}
	var servers []*dns.Server
	var addrs []net.Addr
	var err error
	for _, device := range devices {
		var pc net.PacketConn
		var l net.Listener
		if pc, l, err = listen(ctx, p.opts.Listen, device); err != nil {
			err = fmt.Errorf("listening on %s %s: %w", device, p.opts.Listen, err)
			break
		}
		addrs = append(addrs, pc.LocalAddr(), l.Addr())
		servers = append(servers,
			&dns.Server{PacketConn: pc, Handler: p.handler("udp"), UDPSize: maxMessage},
			&dns.Server{Listener: l, Handler: p.handler("tcp"), ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	}
	p.mu.Lock()
	if err == nil {
		p.addrs = addrs
	}
	p.mu.Unlock()
	close(p.ready)
	if err != nil {
		for _, s := range servers {
			if s.PacketConn != nil {
				_ = s.PacketConn.Close()
			}
			if s.Listener != nil {
				_ = s.Listener.Close()
			}
		}
		return fmt.Errorf("DNS proxy: %w", err)
	}
	errs := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errs <- s.ActivateAndServe() }()
	}
	go p.refresher(ctx)
	sweep := time.NewTicker(10 * time.Second)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			for _, s := range servers {
				_ = s.Shutdown()
			}
			p.upstreams.sockets.prune(time.Now().Add(time.Hour))
			return nil
		case err := <-errs:
			for _, s := range servers {
				_ = s.Shutdown()
			}
			p.upstreams.sockets.prune(time.Now().Add(time.Hour))
			return fmt.Errorf("DNS proxy: %w", err)
		case <-sweep.C:
			p.upstreams.sockets.prune(time.Now().Add(-socketMaxAge))
			p.allowed.sweep(time.Now())
			p.observeAllowed()
		}
	}
}

func (p *Proxy) handler(transport string) dns.Handler {
	return dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) { p.serve(w, req, transport) })
}

// serve answers one query: forward, check, learn, release.
func (p *Proxy) serve(w dns.ResponseWriter, req *dns.Msg, transport string) {
	if req.Opcode != dns.OpcodeQuery || len(req.Question) != 1 {
		p.opts.Observer.ObserveDNSQuery(transport, ResultRefused)
		_ = w.WriteMsg(new(dns.Msg).SetRcode(req, dns.RcodeNotImplemented))
		return
	}
	clientID := req.Id
	// The upstream sees an ID of ours, unpredictable: a response must carry
	// it, and one spoofed by someone off the path must guess it.
	query := req.Copy()
	query.Id = dns.Id()
	packed, err := query.Pack()
	if err != nil {
		p.opts.Observer.ObserveDNSQuery(transport, ResultRefused)
		_ = w.WriteMsg(new(dns.Msg).SetRcode(req, dns.RcodeFormatError))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(p.upstreams.addrs))*p.opts.UpstreamTimeout)
	defer cancel()
	raw, resp, err := p.ask(ctx, query, packed, transport == "tcp", clientUDPSize(req))
	if err != nil {
		p.opts.Log.Debug("no answer from the resolvers", "name", req.Question[0].Name, "error", err)
		p.opts.Observer.ObserveDNSQuery(transport, ResultServFail)
		_ = w.WriteMsg(new(dns.Msg).SetRcode(req, dns.RcodeServerFailure))
		return
	}
	p.learn(req.Question[0], resp)
	raw[0], raw[1] = byte(clientID>>8), byte(clientID)
	if _, err := w.Write(raw); err != nil {
		p.opts.Log.Debug("writing an answer", "error", err)
	}
	p.opts.Observer.ObserveDNSQuery(transport, ResultAnswered)
}

// ask gets the response to release and the message to learn from. A
// truncated UDP response is asked again over TCP: the whole answer is
// learned, and given to the client if it fits its UDP size (else the
// truncated one, and the client asks again over TCP).
func (p *Proxy) ask(ctx context.Context, query *dns.Msg, packed []byte, tcp bool, clientSize int) ([]byte, *dns.Msg, error) {
	start := time.Now()
	raw, resp, _, err := p.upstreams.exchange(ctx, query, packed, tcp)
	p.opts.Observer.ObserveDNSUpstream(time.Since(start), err)
	if err != nil || tcp || !resp.Truncated {
		return raw, resp, err
	}
	start = time.Now()
	fullRaw, full, _, err := p.upstreams.exchange(ctx, query, packed, true)
	p.opts.Observer.ObserveDNSUpstream(time.Since(start), err)
	switch {
	case err != nil:
		return raw, resp, nil
	case len(fullRaw) <= clientSize:
		return fullRaw, full, nil
	default:
		return raw, full, nil
	}
}

// clientUDPSize is the largest UDP response the client takes.
func clientUDPSize(req *dns.Msg) int {
	if opt := req.IsEdns0(); opt != nil {
		return max(dns.MinMsgSize, int(opt.UDPSize()))
	}
	return dns.MinMsgSize
}

// learn allows the answer's addresses for the selectors that match the
// asked name or its chain, and returns once the kernel has them.
func (p *Proxy) learn(q dns.Question, resp *dns.Msg) {
	chain, owned := answerAddresses(q, resp)
	if len(chain) == 0 {
		return
	}
	sels := p.allowed.match(chain)
	if sels == nil {
		return // no selector matches: no set update
	}
	var addrs []found
	for i, name := range chain {
		if len(sels[i]) == 0 {
			continue
		}
		for _, a := range owned[i] {
			addrs = append(addrs, found{name: name, names: chain[:i+1], addr: a.addr, ttl: a.ttl, selectors: sels[i]})
		}
	}
	now := time.Now()
	if len(addrs) == 0 || p.allowed.fresh(addrs, now, p.opts.TTLFloor, p.opts.Grace) {
		return
	}
	// Addresses that every set holds for a while yet let the answer go
	// before their refresh commits: the first SYN finds them anyway. The
	// refresh then costs the client no kernel transaction, and the answers
	// of many names whose refreshes fall due together (all asked at start)
	// do not queue behind each other's.
	if p.allowed.live(addrs, now, liveMargin) {
		select {
		case p.refreshes <- refresh{name: q.Name, addrs: addrs, at: now}:
			return
		default: // the queue is full: refresh before the answer
		}
	}
	p.allow(q.Name, addrs, now)
}

// liveMargin is how long an address must stay allowed for its answer to
// be released before the refresh commits.
const liveMargin = 5 * time.Second

// refresh is an answer's refresh, done after its release.
type refresh struct {
	name  string
	addrs []found
	at    time.Time
}

// refresher does the queued refreshes until ctx is done: those queued
// meanwhile in one kernel transaction, as of the oldest answer among them.
func (p *Proxy) refresher(ctx context.Context) {
	for {
		var r refresh
		select {
		case <-ctx.Done():
			return
		case r = <-p.refreshes:
		}
		addrs := r.addrs
	more:
		for range cap(p.refreshes) {
			select {
			case next := <-p.refreshes:
				addrs = append(addrs, next.addrs...)
				if next.at.Before(r.at) {
					r.at = next.at
				}
			default:
				break more
			}
		}
		p.allow(r.name, addrs, r.at)
	}
}

// allow writes what was found into the sets and returns once the kernel
// has it.
func (p *Proxy) allow(name string, addrs []found, now time.Time) {
	written := 0
	start := time.Now()
	hit, err := p.allowed.update(addrs, now, p.opts.TTLFloor, p.opts.Grace, p.opts.Bounds, func(elems []nftables.FQDNElement) error {
		written = len(elems)
		_, err := p.opts.Updater.UpdateFQDN(elems)
		return err
	})
	if written > 0 {
		p.opts.Observer.ObserveFQDNUpdate(written, time.Since(start), err)
	}
	for _, b := range hit {
		p.opts.Observer.ObserveFQDNBound(b)
		p.opts.Log.Warn("DNS proxy bound reached: addresses left out", "bound", b, "name", name)
	}
	if err != nil {
		p.opts.Log.Error("allowing the addresses of an answer; connections to them are dropped", "name", name, "error", err)
	}
	p.observeAllowed()
}

func (p *Proxy) observeAllowed() {
	s, a := p.allowed.counts()
	p.opts.Observer.ObserveFQDNAllowed(s, a)
}

// noObserver records nothing.
type noObserver struct{}

func (noObserver) ObserveDNSQuery(string, string)              {}
func (noObserver) ObserveDNSUpstream(time.Duration, error)     {}
func (noObserver) ObserveFQDNUpdate(int, time.Duration, error) {}
func (noObserver) ObserveFQDNBound(string)                     {}
func (noObserver) ObserveFQDNAllowed(int, int)                 {}

// listen listens on addr with UDP and TCP, on the same port also when addr
// asks for any port (tried a few times: a port free for UDP may be taken
// for TCP), bound to device unless it is empty.
func listen(ctx context.Context, addr, device string) (net.PacketConn, net.Listener, error) {
	var lc net.ListenConfig
	if device != "" {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var bindErr error
			if err := c.Control(func(fd uintptr) { bindErr = syscall.BindToDevice(int(fd), device) }); err != nil {
				return err
			}
			return bindErr
		}
	}
	for attempt := 0; ; attempt++ {
		pc, err := lc.ListenPacket(ctx, "udp", addr)
		if err != nil {
			return nil, nil, err
		}
		l, err := lc.Listen(ctx, "tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, l, nil
		}
		_ = pc.Close()
		if _, port, _ := net.SplitHostPort(addr); port != "0" || attempt == 10 {
			return nil, nil, err
		}
	}
}
