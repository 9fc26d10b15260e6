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
	// LostRanges are the first MaxLostRanges runs of numbers that had not
	// arrived when ReorderWindow later ones had: where in the stream the
	// lost packets were, to set beside the switches' numbers.
	LostRanges []LostRange `json:"lostRanges,omitempty"`
}

// MaxSwitchLog bounds Report.SwitchLog, MaxLostRanges Report.LostRanges.
const (
	MaxSwitchLog  = 32
	MaxLostRanges = 32
)

// ReorderWindow is how many later numbers may arrive before a missing one
// counts as lost in LostRanges: about a second at the lab's rates.
const ReorderWindow = 256

// LostRange is a run of sequence numbers that did not arrive.
type LostRange struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

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
	rc := newReceiver(started)
	dirty, flushed := false, time.Now()
	flush := func() error {
		rc.scan()
		data, err := json.Marshal(rc.r)
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
		if err == nil && n >= 8 && cm != nil && rc.add(binary.BigEndian.Uint64(buf), cm.TTL, now) {
			dirty = true
		}
		if dirty && now.Sub(flushed) >= 250*time.Millisecond {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// receiver keeps a stream's Report as its packets arrive.
type receiver struct {
	r       Report
	started time.Time
	seen    map[uint64]bool
	byTTL   map[int]int
	last    time.Time
	lastTTL int
	// low is the lowest number not yet looked at by scan.
	low uint64
}

func newReceiver(started time.Time) *receiver {
	return &receiver{started: started, seen: map[uint64]bool{}, byTTL: map[int]int{}, lastTTL: -1}
}

// add counts packet seq, carried with ttl, arrived at now; false for a
// duplicate.
func (c *receiver) add(seq uint64, ttl int, now time.Time) bool {
	r := &c.r
	if c.seen[seq] {
		r.Duplicates++
		return false
	}
	c.seen[seq] = true
	r.Received++
	r.MaxSeq = max(r.MaxSeq, seq)
	if r.MinSeq == 0 || seq < r.MinSeq {
		r.MinSeq = seq
	}
	if gap := float64(now.Sub(c.last).Microseconds()) / 1000; !c.last.IsZero() && gap > r.LargestGapMS {
		r.LargestGapMS, r.LargestGapEndMS, r.LargestGapSeq = gap, now.Sub(c.started).Milliseconds(), seq
	}
	c.last = now
	i, ok := c.byTTL[ttl]
	if !ok {
		i = len(r.Carriers)
		c.byTTL[ttl] = i
		r.Carriers = append(r.Carriers, Carrier{TTL: ttl, FirstSeq: seq, LastSeq: seq})
	}
	cr := &r.Carriers[i]
	cr.Packets++
	cr.FirstSeq, cr.LastSeq = min(cr.FirstSeq, seq), max(cr.LastSeq, seq)
	if c.lastTTL >= 0 && c.lastTTL != ttl {
		r.Switches++
		if len(r.SwitchLog) < MaxSwitchLog {
			r.SwitchLog = append(r.SwitchLog, Switch{AtMS: now.Sub(c.started).Milliseconds(), Seq: seq, From: c.lastTTL, To: ttl})
		}
	}
	c.lastTTL, r.LastTTL = ttl, ttl
	return true
}

// scan records, in LostRanges, the numbers from the first that arrived up
// to ReorderWindow below the highest that did not arrive.
func (c *receiver) scan() {
	r := &c.r
	if r.Received == 0 {
		return
	}
	if c.low == 0 {
		c.low = r.MinSeq
	}
	for ; c.low+ReorderWindow < r.MaxSeq; c.low++ {
		if c.seen[c.low] {
			continue
		}
		if n := len(r.LostRanges); n > 0 && r.LostRanges[n-1].To == c.low-1 {
			r.LostRanges[n-1].To = c.low
		} else if n < MaxLostRanges {
			r.LostRanges = append(r.LostRanges, LostRange{From: c.low, To: c.low})
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
