package dnsproxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/miekg/dns"
)

// maxMessage is the largest DNS message (its length on TCP is 16 bits).
const maxMessage = 65535

// upstreams asks the resolvers, in order, until one answers.
type upstreams struct {
	addrs   []netip.AddrPort
	timeout time.Duration
	sockets socketPool
}

// errNoAnswer is returned when no resolver gave a matching response.
var errNoAnswer = errors.New("no resolver answered")

// exchange sends the packed query (whose ID is query.Id) over UDP or TCP to
// the resolvers in turn and returns the first response that answers it, as
// received and parsed. Over UDP, datagrams that are no such response
// (garbage, another ID, another question) are dropped and the wait goes on:
// a spoofed datagram cannot end a query. mismatched counts them.
func (u *upstreams) exchange(ctx context.Context, query *dns.Msg, packed []byte, tcp bool) (raw []byte, resp *dns.Msg, mismatched int, err error) {
	var errs []error
	for _, addr := range u.addrs {
		attempt, cancel := context.WithTimeout(ctx, u.timeout)
		if tcp {
			raw, resp, err = exchangeTCP(attempt, addr, query, packed)
		} else {
			var n int
			raw, resp, n, err = u.exchangeUDP(attempt, addr, query, packed)
			mismatched += n
		}
		cancel()
		if err == nil {
			return raw, resp, mismatched, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, nil, mismatched, errors.Join(append([]error{errNoAnswer}, errs...)...)
}

// exchangeUDP asks addr over a pooled socket, which goes back to the pool
// only if the first datagram read was the response.
func (u *upstreams) exchangeUDP(ctx context.Context, addr netip.AddrPort, query *dns.Msg, packed []byte) ([]byte, *dns.Msg, int, error) {
	sock, err := u.sockets.get(ctx, addr)
	if err != nil {
		return nil, nil, 0, err
	}
	conn := sock.conn
	clean := false
	defer func() {
		if clean {
			u.sockets.put(addr, sock)
		} else {
			_ = conn.Close()
		}
	}()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := conn.Write(packed); err != nil {
		return nil, nil, 0, err
	}
	bp := buffers.Get().(*[]byte)
	defer buffers.Put(bp)
	buf := *bp
	mismatched := 0
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return nil, nil, mismatched, err
		}
		resp := new(dns.Msg)
		if resp.Unpack(buf[:n]) != nil || matches(query, resp) != nil {
			mismatched++
			continue
		}
		clean = mismatched == 0
		return append([]byte(nil), buf[:n]...), resp, mismatched, nil
	}
}

func exchangeTCP(ctx context.Context, addr netip.AddrPort, query *dns.Msg, packed []byte) ([]byte, *dns.Msg, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr.String())
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = conn.Close() }()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := conn.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(packed))), packed...)); err != nil {
		return nil, nil, err
	}
	var length [2]byte
	if _, err := io.ReadFull(conn, length[:]); err != nil {
		return nil, nil, err
	}
	raw := make([]byte, binary.BigEndian.Uint16(length[:]))
	if _, err := io.ReadFull(conn, raw); err != nil {
		return nil, nil, err
	}
	resp := new(dns.Msg)
	if err := resp.Unpack(raw); err != nil {
		return nil, nil, fmt.Errorf("unparsable response: %w", err)
	}
	if err := matches(query, resp); err != nil {
		return nil, nil, err
	}
	return raw, resp, nil
}
