package agent_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
)

// topology is node (10.0.1.2, fd00:1::2) | firewall (forwarding) | outside
// (203.0.113.2, 2001:db8:1::2). The firewall's interfaces are int0 and ext0.
type topology struct {
	node, fw, outside *netns.NS
}

const (
	nodeV4, nodeV6       = "10.0.1.2", "fd00:1::2"
	outsideV4, outsideV6 = "203.0.113.2", "2001:db8:1::2"
	fwExtV4              = "203.0.113.1"
)

var seq atomic.Int32

func newTopology() *topology {
	prefix := fmt.Sprintf("fwa%d-%d", os.Getpid(), seq.Add(1))
	t := &topology{}
	for _, n := range []struct {
		ns   **netns.NS
		name string
	}{{&t.node, "node"}, {&t.fw, "fw"}, {&t.outside, "out"}} {
		ns, err := netns.New(prefix + "-" + n.name)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(ns.Delete)
		*n.ns = ns
	}
	Expect(netns.Veth(t.node, "eth0", "10.0.1.2/24", t.fw, "int0", "10.0.1.1/24")).To(Succeed())
	Expect(netns.Veth(t.outside, "eth0", "203.0.113.2/24", t.fw, "ext0", "203.0.113.1/24")).To(Succeed())
	for _, c := range []struct {
		ns   *netns.NS
		args []string
	}{
		{t.node, []string{"-6", "addr", "add", "fd00:1::2/64", "dev", "eth0", "nodad"}},
		{t.fw, []string{"-6", "addr", "add", "fd00:1::1/64", "dev", "int0", "nodad"}},
		{t.fw, []string{"-6", "addr", "add", "2001:db8:1::1/64", "dev", "ext0", "nodad"}},
		{t.outside, []string{"-6", "addr", "add", "2001:db8:1::2/64", "dev", "eth0", "nodad"}},
		{t.node, []string{"route", "add", "default", "via", "10.0.1.1"}},
		{t.node, []string{"-6", "route", "add", "default", "via", "fd00:1::1"}},
		{t.outside, []string{"route", "add", "default", "via", "203.0.113.1"}},
		{t.outside, []string{"-6", "route", "add", "default", "via", "2001:db8:1::1"}},
	} {
		Expect(c.ns.IP(c.args...)).To(Succeed())
	}
	Expect(t.fw.EnableForwarding()).To(Succeed())
	return t
}

// serve accepts TCP connections in ns on addr:port, answers each line with
// "<remote address>\n" and then echoes, until the spec ends.
func serve(ns *netns.NS, addr string, port int) {
	var l net.Listener
	Expect(ns.Do(func() error {
		var err error
		l, err = net.Listen("tcp", net.JoinHostPort(addr, fmt.Sprint(port)))
		return err
	})).To(Succeed())
	DeferCleanup(l.Close)
	go func() {
		defer GinkgoRecover()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
				if _, err := fmt.Fprintln(c, host); err != nil {
					return
				}
				_, _ = io.Copy(c, c)
			}()
		}
	}()
}

// dial connects from ns to addr:port; the connection is closed after the spec.
func dial(ns *netns.NS, addr string, port int, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := ns.Do(func() error {
		var err error
		c, err = net.DialTimeout("tcp", net.JoinHostPort(addr, fmt.Sprint(port)), timeout)
		return err
	})
	if err == nil {
		DeferCleanup(c.Close)
	}
	return c, err
}

// allowedWithin bounds a connection that must get through. It returns as
// soon as it does; the bound leaves room for neighbour discovery and two SYN
// retransmissions (1 s, 3 s) on a loaded machine, where 2 s once ran out
// for the first IPv6 connection of a run (CI, 2026-11-28).
const allowedWithin = 7 * time.Second

// connect dials and returns the address the server saw as the client's.
func connect(ns *netns.NS, addr string, port int) (string, error) {
	c, err := dial(ns, addr, port, allowedWithin)
	if err != nil {
		return "", err
	}
	_ = c.SetDeadline(time.Now().Add(allowedWithin))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n-1]), nil
}

// expectAllowed checks that a connection gets through.
func expectAllowed(ns *netns.NS, addr string, port int) string {
	seen, err := connect(ns, addr, port)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "connecting to [%s]:%d", addr, port)
	return seen
}

// expectDropped checks that a connection attempt times out (dropped, not
// refused).
func expectDropped(ns *netns.NS, addr string, port int) {
	_, err := dial(ns, addr, port, time.Second)
	var ne net.Error
	ExpectWithOffset(1, errors.As(err, &ne) && ne.Timeout()).To(BeTrue(), "connecting to [%s]:%d must time out, got %v", addr, port, err)
}
