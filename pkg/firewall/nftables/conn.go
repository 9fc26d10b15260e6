package nftables

import (
	"errors"
	"fmt"
	"os"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// SocketBufferBytes is the netlink socket buffer size the agent asks for. A
// batch travels in one sendmsg, and google/nftables v0.3.0 keeps the default
// buffers, which fail at a few hundred rules or a few thousand set elements
// ("message too long", "no buffer space available").
const SocketBufferBytes = 64 << 20

// Open opens a lasting netlink connection to nftables, in the network namespace
// at nsPath (e.g. /var/run/netns/NAME) or, when nsPath is empty, in the
// calling thread's namespace. Close it with CloseLasting.
func Open(nsPath string) (*nftables.Conn, error) {
	opts := []nftables.ConnOption{nftables.AsLasting(), nftables.WithSockOptions(raiseBuffers)}
	if nsPath != "" {
		f, err := os.Open(nsPath)
		if err != nil {
			return nil, fmt.Errorf("opening network namespace: %w", err)
		}
		// The socket keeps the namespace once created.
		defer func() { _ = f.Close() }()
		opts = append(opts, nftables.WithNetNSFd(int(f.Fd())))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("opening nftables netlink connection: %w", err)
	}
	return c, nil
}

// open opens the lasting connection of one operation: to the namespace, or
// to the recorder that stands in for the kernel in tests.
func (p *Programmer) open() (*nftables.Conn, error) {
	if p.testDial != nil {
		return nftables.New(nftables.AsLasting(), nftables.WithTestDial(p.testDial))
	}
	return Open(p.nsPath)
}

// raiseBuffers sets the send and receive buffers, beyond the system maximum
// where allowed (SO_*BUFFORCE needs CAP_NET_ADMIN, which the agent has anyway).
func raiseBuffers(c *netlink.Conn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var errs []error
	ctrlErr := raw.Control(func(fd uintptr) {
		for _, opt := range [][2]int{{unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}, {unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}} {
			if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt[0], SocketBufferBytes); err != nil {
				if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt[1], SocketBufferBytes); err != nil {
					errs = append(errs, err)
				}
			}
		}
	})
	return errors.Join(append(errs, ctrlErr)...)
}
