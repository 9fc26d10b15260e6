package dnsproxy

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Reuse of upstream UDP sockets: a socket per query costs the proxy a
// quarter of its CPU (socket, connect, close). A socket serves one query at
// a time and goes back to the pool only after a clean exchange (the
// response that matched, nothing else read), so no late or stray datagram
// is waiting in it; it is closed after socketMaxAge, so that the source
// ports keep changing, as CoreDNS's forward plugin does (its expire: 10s).
const (
	socketMaxAge = 10 * time.Second
	// socketsIdle bounds the idle sockets kept per upstream.
	socketsIdle = 256
)

// socketPool keeps idle connected UDP sockets per upstream.
type socketPool struct {
	mu   sync.Mutex
	idle map[netip.AddrPort][]pooledSocket
}

type pooledSocket struct {
	conn net.Conn
	born time.Time
}

// get returns an idle socket to addr young enough, or a new one.
func (p *socketPool) get(ctx context.Context, addr netip.AddrPort) (pooledSocket, error) {
	now := time.Now()
	p.mu.Lock()
	for list := p.idle[addr]; len(list) > 0; list = p.idle[addr] {
		s := list[len(list)-1]
		p.idle[addr] = list[:len(list)-1]
		if now.Sub(s.born) < socketMaxAge {
			p.mu.Unlock()
			return s, nil
		}
		_ = s.conn.Close()
	}
	p.mu.Unlock()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", addr.String())
	if err != nil {
		return pooledSocket{}, err
	}
	return pooledSocket{conn: conn, born: now}, nil
}

// put gives a socket back after a clean exchange, or closes it.
func (p *socketPool) put(addr netip.AddrPort, s pooledSocket) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = map[netip.AddrPort][]pooledSocket{}
	}
	if len(p.idle[addr]) >= socketsIdle || time.Since(s.born) >= socketMaxAge {
		_ = s.conn.Close()
		return
	}
	p.idle[addr] = append(p.idle[addr], s)
}

// prune closes the idle sockets born before cutoff.
func (p *socketPool) prune(cutoff time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, list := range p.idle {
		kept := list[:0]
		for _, s := range list {
			if s.born.Before(cutoff) {
				_ = s.conn.Close()
			} else {
				kept = append(kept, s)
			}
		}
		p.idle[addr] = kept
	}
}

// buffers holds buffers of maxMessage bytes for reading UDP responses.
var buffers = sync.Pool{New: func() any { b := make([]byte, maxMessage); return &b }}
