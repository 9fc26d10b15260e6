package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/metal-stack/metal-go/api/models"

	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// Probe ports. The node sends to this host on ToHostAllowed and
// ToHostForbidden, this host to the node's load balancer address on
// ToNodeAllowed and ToNodeForbidden, every ProbeInterval, for as long as
// the lab runs.
// Whether "allowed" ones pass is the shoot owner's policy's business; the
// "forbidden" ones are meant to be allowed by the firewall image's own
// rules (the allocation's firewall_rules, Hardware.FirewallRules) and by no
// policy of the agent: one of them arriving means that a packet was
// forwarded while the agent's table was not in place.
const (
	ToHostAllowed   = 7100
	ToHostForbidden = 7101
	ToNodeAllowed   = 7200
	ToNodeForbidden = 7201
	ProbeInterval   = 20 * time.Millisecond
)

// ProbeFirewallRules are the allocation's firewall_rules that let the
// forbidden probes through the firewall image's own table (MEP-16): for
// Hardware.FirewallRules.
func ProbeFirewallRules() *models.V1FirewallRules {
	return &models.V1FirewallRules{
		Egress: []*models.V1FirewallEgressRule{{Protocol: "UDP", Ports: []int32{ToHostForbidden}, To: []string{HostAddress.String() + "/32"}, Comment: "probe"}},
		Ingress: []*models.V1FirewallIngressRule{{Protocol: "UDP", Ports: []int32{ToNodeForbidden}, From: []string{HostAddress.String() + "/32"},
			To: []string{LoadBalancerAddress.String() + "/32"}, Comment: "probe"}},
	}
}

// Probes are the lab's running UDP probes.
type Probes struct {
	share  string
	mu     sync.Mutex
	counts map[int]int
	// sources are the addresses this host saw each port's probes from.
	sources map[int]map[string]bool
	conns   []*net.UDPConn
	stop    chan struct{}
}

// StartProbes builds the probe program, starts it in the node's namespace
// (its senders and counters), and starts this host's.
func (l *Lab) StartProbes(ctx context.Context) (*Probes, error) {
	bin := filepath.Join(l.opts.Share, "labprobe")
	build := exec.Command("go", "build", "-o", bin, "./labprobe")
	build.Dir = filepath.Join(testenv.RepoRoot(), "test", "lab")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building labprobe: %w: %s", err, out)
	}
	p := &Probes{share: l.opts.Share, counts: map[int]int{}, sources: map[int]map[string]bool{}, stop: make(chan struct{})}
	for _, port := range []int{ToHostAllowed, ToHostForbidden} {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(HostAddress, uint16(port))))
		if err != nil {
			p.Close()
			return nil, err
		}
		p.conns = append(p.conns, c)
		go p.receive(port, c)
	}
	for _, port := range []int{ToNodeAllowed, ToNodeForbidden} {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(LoadBalancerAddress, uint16(port))))
		if err != nil {
			p.Close()
			return nil, err
		}
		p.conns = append(p.conns, c)
		go p.send(c)
	}
	var s strings.Builder
	for _, port := range []int{ToHostAllowed, ToHostForbidden} {
		fmt.Fprintf(&s, "setsid ip netns exec node /lab/share/labprobe send %s:%d %s >/dev/null 2>&1 </dev/null &\n", HostAddress, port, ProbeInterval)
	}
	for _, port := range []int{ToNodeAllowed, ToNodeForbidden} {
		fmt.Fprintf(&s, "setsid ip netns exec node /lab/share/labprobe count %s:%d /lab/share/count-%d >/dev/null 2>&1 </dev/null &\n", LoadBalancerAddress, port, port)
	}
	if _, err := l.Run(ctx, s.String()); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Probes) receive(port int, c *net.UDPConn) {
	buf := make([]byte, 64)
	for {
		_, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		p.mu.Lock()
		p.counts[port]++
		if p.sources[port] == nil {
			p.sources[port] = map[string]bool{}
		}
		p.sources[port][from.Addr().String()] = true
		p.mu.Unlock()
	}
}

func (p *Probes) send(c *net.UDPConn) {
	t := time.NewTicker(ProbeInterval)
	defer t.Stop()
	for seq := uint64(1); ; seq++ {
		select {
		case <-p.stop:
			return
		case <-t.C:
			_, _ = c.Write([]byte(strconv.FormatUint(seq, 10)))
		}
	}
}

// Count is how many probes arrived on port so far.
func (p *Probes) Count(port int) int {
	if port == ToNodeAllowed || port == ToNodeForbidden {
		data, err := os.ReadFile(filepath.Join(p.share, fmt.Sprintf("count-%d", port)))
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		return n
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[port]
}

// Sources are the addresses this host saw the probes to port from.
func (p *Probes) Sources(port int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for a := range p.sources[port] {
		out = append(out, a)
	}
	return out
}

// ResetSources forgets the sources seen so far.
func (p *Probes) ResetSources() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sources = map[int]map[string]bool{}
}

// Forbidden returns an error naming the forbidden probes that arrived.
func (p *Probes) Forbidden() error {
	var errs []error
	for _, port := range []int{ToHostForbidden, ToNodeForbidden} {
		if n := p.Count(port); n > 0 {
			errs = append(errs, fmt.Errorf("%d probes to port %d were forwarded, which only the image's rules allow: the agent's table was not in place", n, port))
		}
	}
	return errors.Join(errs...)
}

// Close stops this host's probes; the node's end with the lab machine.
func (p *Probes) Close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
}
