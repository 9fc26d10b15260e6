// Package netns creates named Linux network namespaces and veth links with
// iproute2 (root only): the local machine provider builds its firewall
// machines with it, and the tests their hosts. Namespaces are named, so
// `ip netns exec NAME ...` works on them too.
package netns

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// NS is a named network namespace.
type NS struct {
	Name string
}

// Exists tells whether a named namespace exists.
func Exists(name string) bool {
	_, err := os.Stat(filepath.Join(Dir, name))
	return err == nil
}

// Dir holds the bind-mounted files of named namespaces.
const Dir = "/var/run/netns"

// New creates a network namespace with loopback up.
func New(name string) (*NS, error) {
	if err := ip("netns", "add", name); err != nil {
		return nil, err
	}
	ns := &NS{Name: name}
	if err := ns.IP("link", "set", "lo", "up"); err != nil {
		_ = ns.Delete()
		return nil, err
	}
	return ns, nil
}

// Delete removes the namespace and with it every link inside.
func (n *NS) Delete() error { return ip("netns", "delete", n.Name) }

// Path is the bind-mounted namespace file, usable with setns(2).
func (n *NS) Path() string { return filepath.Join(Dir, n.Name) }

// IP runs `ip ARGS` inside the namespace.
func (n *NS) IP(args ...string) error {
	return ip(append([]string{"-n", n.Name}, args...)...)
}

// Exec runs a command inside the namespace and returns its combined output.
func (n *NS) Exec(name string, args ...string) (string, error) {
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s in netns %s: %w: %s", name, strings.Join(args, " "), n.Name, err, out.String())
	}
	return out.String(), nil
}

// Do runs fn on an OS thread that has entered the namespace. Sockets created in
// fn belong to the namespace and may be used from any goroutine afterwards.
func (n *NS) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// The thread is never returned to the scheduler's pool in its changed
		// namespace: it exits with this goroutine because it stays locked.
		runtime.LockOSThread()
		f, err := os.Open(n.Path())
		if err != nil {
			errc <- err
			return
		}
		defer func() { _ = f.Close() }()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", n.Name, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// Veth connects namespace a (interface aName, address aAddr in CIDR notation) with
// namespace b (bName, bAddr) and sets both ends up. An empty address is left unset.
func Veth(a *NS, aName, aAddr string, b *NS, bName, bAddr string) error {
	if err := a.IP("link", "add", aName, "type", "veth", "peer", "name", bName, "netns", b.Name); err != nil {
		return err
	}
	for _, end := range []struct {
		ns         *NS
		name, addr string
	}{{a, aName, aAddr}, {b, bName, bAddr}} {
		if end.addr != "" {
			if err := end.ns.IP("addr", "add", end.addr, "dev", end.name); err != nil {
				return err
			}
		}
		if err := end.ns.IP("link", "set", end.name, "up"); err != nil {
			return err
		}
	}
	return nil
}

// EnableForwarding turns the namespace into a router for IPv4 and IPv6.
func (n *NS) EnableForwarding() error {
	for _, key := range []string{"net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"} {
		if _, err := n.Exec("sysctl", "-q", "-w", key); err != nil {
			return err
		}
	}
	return nil
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
