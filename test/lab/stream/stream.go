// Package stream sends and receives the lab's numbered UDP streams: what
// arrived, what was lost, and which firewall carried each packet (the TTL
// the lab's firewalls set on what they forward).
package stream

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
)

// Flows is how many source ports a stream's packets rotate over: a
// fabric that spreads flows over equal paths (ECMP) spreads these.
const Flows = 16

// Send sends RATE packets a second to ADDR, each with its sequence
// number (from 1), rotating over Flows sockets, until killed. It
// catches up after a late tick, so the count stays RATE × seconds.
func Send(addr, rate string) error {
	perSecond, err := strconv.Atoi(rate)
	if err != nil || perSecond <= 0 {
		return fmt.Errorf("rate %q: must be a positive number", rate)
	}
	conns := make([]net.Conn, Flows)
	for i := range conns {
		if conns[i], err = net.Dial("udp", addr); err != nil {
			return err
		}
	}
	buf := make([]byte, 8)
	start := time.Now()
	var seq uint64
	// One wake-up per packet at most: an emulated machine pays for each.
	t := time.NewTicker(max(time.Millisecond, time.Second/time.Duration(perSecond)))
	defer t.Stop()
	for range t.C {
		due := uint64(time.Since(start).Seconds() * float64(perSecond))
		for seq < due {
			seq++
			binary.BigEndian.PutUint64(buf, seq)
			// A refused or unroutable packet is a lost probe, not a stop. A
			// connected socket returns an earlier packet's ICMP error on
			// the next write, which then did not send: send that one again.
			if _, err := conns[seq%Flows].Write(buf); err != nil {
				_, _ = conns[seq%Flows].Write(buf)
			}
		}
	}
	return nil
}

// Carrier is what arrived with one TTL: the lab's firewalls set the TTL of
// the stream's packets they forward to a value of their own.
type Carrier struct {
	TTL      int    `json:"ttl"`
	Packets  int    `json:"packets"`
	FirstSeq uint64 `json:"firstSeq"`
	LastSeq  uint64 `json:"lastSeq"`
}

// Report is what Receive keeps in its file.
type Report struct {
	Received int `json:"received"`
	// MinSeq and MaxSeq are the lowest and the highest number that arrived:
	// what was lost before the first arrival (a policy not yet in force) is
	// not counted.
	MinSeq uint64 `json:"minSeq"`
	MaxSeq uint64 `json:"maxSeq"`
	// Duplicates counts sequence numbers that arrived twice.
	Duplicates int `json:"duplicates"`
	// LargestGapMS is the longest time between two arrivals; it ended
	// LargestGapEndMS after the receiver started, with LargestGapSeq.
	LargestGapMS    float64 `json:"largestGapMS"`
	LargestGapEndMS int64   `json:"largestGapEndMS"`
	LargestGapSeq   uint64  `json:"largestGapSeq"`
	// Switches counts the changes of carrier in arrival order.
	Switches int `json:"switches"`
	// LastTTL is the carrier of the last packet.
	LastTTL  int       `json:"lastTTL"`
	Carriers []Carrier `json:"carriers"`
	// SwitchLog is when the first MaxSwitchLog switches happened.
	SwitchLog []Switch `json:"switchLog,omitempty"`
}

// MaxSwitchLog bounds Report.SwitchLog.
const MaxSwitchLog = 32

// Switch is one change of carrier: the packet that came with the new TTL,
// and when, in milliseconds since the receiver started.
type Switch struct {
	AtMS int64  `json:"atMS"`
	Seq  uint64 `json:"seq"`
	From int    `json:"from"`
	To   int    `json:"to"`
}

// Receive receives a stream on ADDR and keeps a StreamReport in FILE,
// written every 100 ms.
func Receive(addr, file string) error {
	c, err := net.ListenPacket("udp4", addr)
	if err != nil {
		return err
	}
	p := ipv4.NewPacketConn(c)
	if err := p.SetControlMessage(ipv4.FlagTTL, true); err != nil {
		return err
	}
	// Room for a minute of packets while an emulated machine starves the
	// receiver: SO_RCVBUFFORCE passes net.core.rmem_max (as root), which
	// would otherwise cap the buffer at about 500 packets, lost as
	// UdpRcvbufErrors and counted here as lost on the path.
	if u, ok := c.(*net.UDPConn); ok {
		forced := false
		if raw, err := u.SyscallConn(); err == nil {
			_ = raw.Control(func(fd uintptr) {
				forced = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 32<<20) == nil
			})
		}
		if !forced {
			_ = u.SetReadBuffer(32 << 20)
		}
	}
	started := time.Now()
	var (
		r       Report
		seen    = map[uint64]bool{}
		byTTL   = map[int]int{}
		last    time.Time
		lastTTL = -1
		dirty   bool
		flushed = time.Now()
	)
	flush := func() error {
		data, err := json.Marshal(r)
		if err != nil {
			return err
		}
		dirty, flushed = false, time.Now()
		return writeFile(file, data)
	}
	if err := flush(); err != nil {
		return err
	}
	buf := make([]byte, 64)
	for {
		_ = p.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, cm, _, err := p.ReadFrom(buf)
		now := time.Now()
		if err == nil && n >= 8 && cm != nil {
			seq := binary.BigEndian.Uint64(buf)
			if seen[seq] {
				r.Duplicates++
			} else {
				seen[seq] = true
				r.Received++
				r.MaxSeq = max(r.MaxSeq, seq)
				if r.MinSeq == 0 || seq < r.MinSeq {
					r.MinSeq = seq
				}
				if gap := float64(now.Sub(last).Microseconds()) / 1000; !last.IsZero() && gap > r.LargestGapMS {
					r.LargestGapMS, r.LargestGapEndMS, r.LargestGapSeq = gap, now.Sub(started).Milliseconds(), seq
				}
				last = now
				i, ok := byTTL[cm.TTL]
				if !ok {
					i = len(r.Carriers)
					byTTL[cm.TTL] = i
					r.Carriers = append(r.Carriers, Carrier{TTL: cm.TTL, FirstSeq: seq, LastSeq: seq})
				}
				cr := &r.Carriers[i]
				cr.Packets++
				cr.FirstSeq, cr.LastSeq = min(cr.FirstSeq, seq), max(cr.LastSeq, seq)
				if lastTTL >= 0 && lastTTL != cm.TTL {
					r.Switches++
					if len(r.SwitchLog) < MaxSwitchLog {
						r.SwitchLog = append(r.SwitchLog, Switch{AtMS: now.Sub(started).Milliseconds(), Seq: seq, From: lastTTL, To: cm.TTL})
					}
				}
				lastTTL, r.LastTTL = cm.TTL, cm.TTL
				dirty = true
			}
		}
		if dirty && now.Sub(flushed) >= 250*time.Millisecond {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// Lost is how many packets between the first and the last that arrived
// did not.
func (r Report) Lost() int {
	if r.Received == 0 {
		return 0
	}
	return int(r.MaxSeq-r.MinSeq+1) - r.Received
}

// writeFile replaces file in one rename, so a reader never sees half.
func writeFile(file string, data []byte) error {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}
