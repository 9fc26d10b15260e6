package main

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

// Ports of the echo servers: outside (behind the machine's ext0) and on the
// shoot's node (behind int0).
const (
	outsidePort = "7000"
	nodePort    = "8080"
)

func (d *demo) outsideAddr() string { return net.JoinHostPort(d.wiring.Outside, outsidePort) }
func (d *demo) nodeAddr() string    { return net.JoinHostPort(d.wiring.Node, nodePort) }

// startEchoServers runs a server outside and one on the node.
func (d *demo) startEchoServers() error {
	for _, s := range []struct{ netns, addr string }{
		{d.wiring.ExternalNetNS, d.outsideAddr()},
		{d.wiring.InternalNetNS, d.nodeAddr()},
	} {
		l, err := framework.StartEchoServer(s.netns, s.addr)
		if err != nil {
			return err
		}
		d.listeners = append(d.listeners, l)
	}
	return nil
}

// droppedFromNode checks that a new connection from the node to addr gets
// no answer at all: dropped, not refused.
func (d *demo) droppedFromNode(addr string) error {
	conn, err := framework.DialFrom(d.wiring.InternalNetNS, addr, 2*time.Second)
	if err == nil {
		_ = conn.Close()
		return fmt.Errorf("a new connection from the node to %s was accepted", addr)
	}
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		return fmt.Errorf("a new connection from the node to %s failed, but not by a drop: %w", addr, err)
	}
	return nil
}

// droppedFromOutside checks that a new connection from outside to the node
// gets no answer at all: dropped, not refused.
func (d *demo) droppedFromOutside() error {
	conn, err := framework.DialFrom(d.wiring.ExternalNetNS, d.nodeAddr(), 2*time.Second)
	if err == nil {
		_ = conn.Close()
		return fmt.Errorf("a new connection from %s to %s was accepted", d.wiring.Outside, d.nodeAddr())
	}
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		return fmt.Errorf("a new connection from %s to %s failed, but not by a drop: %w", d.wiring.Outside, d.nodeAddr(), err)
	}
	return nil
}
