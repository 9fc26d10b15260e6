package framework

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
)

// PortOf is the port of a URL such as a rest.Config's Host.
func PortOf(host string) (int, error) {
	u, err := url.Parse(host)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(u.Port())
}

// DialFrom opens a TCP connection from inside a network namespace.
func DialFrom(ns, addr string, timeout time.Duration) (net.Conn, error) {
	var conn net.Conn
	err := (&netns.NS{Name: ns}).Do(func() (err error) {
		conn, err = net.DialTimeout("tcp", addr, timeout)
		return err
	})
	return conn, err
}

// StartEchoServer listens on addr inside a network namespace and sends every
// connection's bytes back. Close the listener to stop it.
func StartEchoServer(ns, addr string) (net.Listener, error) {
	var server net.Listener
	if err := (&netns.NS{Name: ns}).Do(func() (err error) {
		server, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		return nil, err
	}
	go EchoServe(server)
	return server, nil
}

// EchoServe sends every connection's bytes back until l is closed.
func EchoServe(l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		go func() { defer func() { _ = conn.Close() }(); _, _ = io.Copy(conn, conn) }()
	}
}

// EchoConn is a connection to an echo server that checks lines come back.
type EchoConn struct {
	net.Conn
	reader *bufio.Reader
}

// NewEchoConn wraps a connection to an echo server.
func NewEchoConn(conn net.Conn) *EchoConn {
	return &EchoConn{Conn: conn, reader: bufio.NewReader(conn)}
}

// Echo sends one line and expects it back within 5 s.
func (c *EchoConn) Echo(msg string) error {
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(c, msg); err != nil {
		return err
	}
	line, err := c.reader.ReadString('\n')
	if err != nil {
		return err
	}
	if line != msg+"\n" {
		return fmt.Errorf("sent %q, got %q back", msg, line)
	}
	return nil
}
