// Package dnsproxytest is a scriptable DNS server for the DNS proxy's tests:
// it answers as a resolver does, or as a hostile one would (another ID,
// another question, garbage, records for names never asked).
package dnsproxytest

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync"

	"github.com/miekg/dns"
)

// Reply decides what the server sends for a query: raw messages, in order
// (over TCP only the first). Answer builds the usual ones.
type Reply func(query *dns.Msg, tcp bool) [][]byte

// Server listens on UDP and TCP on one address.
type Server struct {
	Addr  string
	pc    net.PacketConn
	l     net.Listener
	mu    sync.Mutex
	reply Reply
	// queries counts the queries received.
	queries int
	// udpSources lists the distinct addresses UDP queries came from.
	udpSources []string
	wg         sync.WaitGroup
}

// Start listens on addr (e.g. "127.0.0.1:0") in the calling thread's
// network namespace and answers with reply.
func Start(addr string, reply Reply) (*Server, error) {
	var (
		pc  net.PacketConn
		l   net.Listener
		err error
	)
	// Any port for UDP may be taken for TCP: try a few.
	for range 10 {
		if pc, err = net.ListenPacket("udp", addr); err != nil {
			return nil, err
		}
		if l, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		_ = pc.Close()
	}
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: pc.LocalAddr().String(), pc: pc, l: l, reply: reply}
	s.wg.Add(2)
	go s.serveUDP()
	go s.serveTCP()
	return s, nil
}

// SetReply changes how the server answers.
func (s *Server) SetReply(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reply = r
}

// Queries returns how many queries the server received.
func (s *Server) Queries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries
}

// UDPSources returns the distinct addresses UDP queries came from, in the
// order they first came.
func (s *Server) UDPSources() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.udpSources...)
}

// Close stops the server.
func (s *Server) Close() error {
	err := errors.Join(s.pc.Close(), s.l.Close())
	s.wg.Wait()
	return err
}

func (s *Server) answer(raw []byte, tcp bool) [][]byte {
	q := new(dns.Msg)
	if q.Unpack(raw) != nil {
		return nil
	}
	s.mu.Lock()
	s.queries++
	reply := s.reply
	s.mu.Unlock()
	return reply(q, tcp)
}

func (s *Server) serveUDP() {
	defer s.wg.Done()
	buf := make([]byte, 65535)
	for {
		n, from, err := s.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		s.mu.Lock()
		if !slices.Contains(s.udpSources, from.String()) {
			s.udpSources = append(s.udpSources, from.String())
		}
		s.mu.Unlock()
		for _, out := range s.answer(buf[:n], false) {
			_, _ = s.pc.WriteTo(out, from)
		}
	}
}

func (s *Server) serveTCP() {
	defer s.wg.Done()
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { _ = c.Close() }()
			var length [2]byte
			if _, err := io.ReadFull(c, length[:]); err != nil {
				return
			}
			raw := make([]byte, binary.BigEndian.Uint16(length[:]))
			if _, err := io.ReadFull(c, raw); err != nil {
				return
			}
			if out := s.answer(raw, true); len(out) > 0 {
				_, _ = c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(out[0]))), out[0]...))
			}
		}()
	}
}

// Answer returns a reply that answers every query with rrs (in zone file
// syntax, e.g. "api.example.com. 60 IN A 192.0.2.1"), truncated to 512
// bytes or the query's EDNS0 size over UDP, as a resolver does.
func Answer(rrs ...string) Reply {
	return Records(rrs, nil, nil)
}

// Records answers with the given answer, authority and additional records.
func Records(answer, authority, additional []string) Reply {
	parse := func(list []string) []dns.RR {
		var out []dns.RR
		for _, s := range list {
			rr, err := dns.NewRR(s)
			if err != nil {
				panic(err)
			}
			out = append(out, rr)
		}
		return out
	}
	an, ns, extra := parse(answer), parse(authority), parse(additional)
	return func(q *dns.Msg, tcp bool) [][]byte {
		m := new(dns.Msg).SetReply(q)
		m.Answer, m.Ns, m.Extra = an, ns, extra
		m.Compress = true
		if opt := q.IsEdns0(); opt != nil {
			m.SetEdns0(opt.UDPSize(), false)
		}
		if !tcp {
			size := dns.MinMsgSize
			if opt := q.IsEdns0(); opt != nil {
				size = max(size, int(opt.UDPSize()))
			}
			m.Truncate(size)
		}
		raw, err := m.Pack()
		if err != nil {
			panic(err)
		}
		return [][]byte{raw}
	}
}
