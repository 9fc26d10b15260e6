package droplog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	nflog "github.com/florianl/go-nflog/v2"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Recorder counts what the drop log does; the agent's metrics are one. Its
// methods must be safe for concurrent use.
type Recorder interface {
	// Event counts an event read from the kernel, by action.
	Event(action string)
	// Lost counts events lost, by reason.
	Lost(reason string, n uint64)
	// Batch counts a batch sent or not, with its number of events.
	Batch(ok bool, events int)
}

// Reasons of lost events, as Recorder.Lost names them.
const (
	LostQueueFull = "queue-full"
	LostKernel    = "kernel-overrun"
	LostSend      = "send-failed"
)

// copyRange is how much of each packet the kernel copies to the agent: the
// IPv6 header, a few extension headers and the ports.
const copyRange = 256

// readBuffer is the socket's receive buffer; a flood beyond it overruns and
// the gap in the kernel's sequence numbers counts the events lost.
const readBuffer = 4 << 20

// Reader reads the events of an NFLOG group from the kernel into a queue.
type Reader struct {
	Group uint16
	// NetNS is the path of the network namespace whose group to read
	// (tests); empty: the agent's own.
	NetNS    string
	Queue    *Queue
	Recorder Recorder
	Log      *slog.Logger

	ifMu    sync.Mutex
	ifNames map[uint32]string
	// lastSeq is the kernel's sequence number of the last event; seen says
	// whether there was one.
	lastSeq uint32
	seen    bool
}

// Run reads until ctx is done. It returns an error when the group cannot be
// bound (another program reads it, no permission).
func (r *Reader) Run(ctx context.Context) error {
	netnsFD := 0
	if r.NetNS != "" {
		f, err := os.Open(r.NetNS)
		if err != nil {
			return fmt.Errorf("network namespace: %w", err)
		}
		defer func() { _ = f.Close() }()
		netnsFD = int(f.Fd())
	}
	nf, err := nflog.Open(&nflog.Config{
		NetNS:    netnsFD,
		Group:    r.Group,
		Copymode: nflog.CopyPacket,
		Bufsize:  copyRange,
		// Sequence numbers per group: a gap is events the socket lost.
		Flags: nflog.FlagSeq,
		// The kernel hands events over after 32 or 0.2 s, whichever first.
		QThresh: 32,
		Timeout: 20,
	})
	if err != nil {
		return fmt.Errorf("opening NFLOG group %d: %w", r.Group, err)
	}
	defer func() { _ = nf.Close() }()
	if err := nf.Con.SetReadBuffer(readBuffer); err != nil {
		r.Log.Info("cannot enlarge the NFLOG socket's buffer", "error", err)
	}
	done := make(chan error, 1)
	errFn := func(err error) int {
		if ctx.Err() != nil {
			return 1
		}
		if errors.Is(err, unix.ENOBUFS) {
			return 0 // the sequence gap counts what was lost
		}
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Timeout() {
			return 0
		}
		select {
		case done <- err:
		default:
		}
		return 1
	}
	if err := nf.RegisterWithErrorFunc(ctx, r.handle, errFn); err != nil {
		return fmt.Errorf("binding NFLOG group %d: %w", r.Group, err)
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-done:
		return fmt.Errorf("reading NFLOG group %d: %w", r.Group, err)
	}
}

// handle queues one event; it always returns 0, so reading goes on.
func (r *Reader) handle(a nflog.Attribute) int {
	if a.Seq != nil {
		if r.seen && *a.Seq-r.lastSeq > 1 {
			r.Queue.Lose(uint64(*a.Seq - r.lastSeq - 1))
			if r.Recorder != nil {
				r.Recorder.Lost(LostKernel, uint64(*a.Seq-r.lastSeq-1))
			}
		}
		r.lastSeq, r.seen = *a.Seq, true
	}
	if a.Payload == nil {
		return 0
	}
	prefix := ""
	if a.Prefix != nil {
		prefix = *a.Prefix
	}
	e, err := Decode(prefix, *a.Payload)
	if err != nil {
		r.Log.Debug("undecodable logged packet", "error", err)
	}
	e.Time = time.Now().UTC()
	if a.Timestamp != nil {
		e.Time = a.Timestamp.UTC()
	}
	if a.InDev != nil {
		e.InInterface = r.ifName(*a.InDev)
	}
	if a.OutDev != nil {
		e.OutInterface = r.ifName(*a.OutDev)
	}
	if r.Recorder != nil {
		r.Recorder.Event(e.Action)
	}
	if !r.Queue.Push(e) && r.Recorder != nil {
		r.Recorder.Lost(LostQueueFull, 1)
	}
	return 0
}

// ifName names an interface index, cached: interfaces of a firewall are few
// and stable; an unknown index stays a number.
func (r *Reader) ifName(idx uint32) string {
	r.ifMu.Lock()
	defer r.ifMu.Unlock()
	if name, ok := r.ifNames[idx]; ok {
		return name
	}
	name := fmt.Sprintf("if%d", idx)
	if n, err := r.lookupIf(idx); err == nil {
		name = n
	}
	if r.ifNames == nil || len(r.ifNames) > 1024 {
		r.ifNames = map[uint32]string{}
	}
	r.ifNames[idx] = name
	return name
}

// lookupIf names an interface of the reader's network namespace.
func (r *Reader) lookupIf(idx uint32) (string, error) {
	if r.NetNS == "" {
		iface, err := net.InterfaceByIndex(int(idx))
		if err != nil {
			return "", err
		}
		return iface.Name, nil
	}
	ns, err := netns.GetFromPath(r.NetNS)
	if err != nil {
		return "", err
	}
	defer func() { _ = ns.Close() }()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return "", err
	}
	defer h.Close()
	link, err := h.LinkByIndex(int(idx))
	if err != nil {
		return "", err
	}
	return link.Attrs().Name, nil
}
