// Package roottest holds what tests that need root share: whether they may
// run here, and the seed-loopback forward a firewall machine in a namespace
// uses to reach a control plane started for the test.
package roottest

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
)

// IsRoot tells whether the process may create namespaces. The Makefile runs the
// netns tests as root in CI; a suite must fail, not skip, when RequireRoot is set.
func IsRoot() bool { return os.Geteuid() == 0 }

// RequireRootEnv, when "true", turns a missing root into a failure instead of a skip,
// so CI cannot pass with the packet tests silently left out.
const RequireRootEnv = "REQUIRE_ROOT_TESTS"

// SkipReason returns why root tests cannot run here, "" when they can. With
// REQUIRE_ROOT_TESTS=true it returns "" and lets the tests fail loudly instead.
func SkipReason() string {
	if IsRoot() || os.Getenv(RequireRootEnv) == "true" {
		return ""
	}
	return "needs root to create network namespaces"
}

// ForwardLoopback makes 127.0.0.1:port inside the namespace reach
// 127.0.0.1:port of the host, the way a firewall machine reaches its seed:
// a kube-apiserver started for a test listens on the host's loopback only,
// and its certificate names 127.0.0.1. It runs until ctx is done.
func ForwardLoopback(ctx context.Context, n *netns.NS, port int) error {
	var l net.Listener
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := n.Do(func() (err error) {
		l, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		return fmt.Errorf("listening on %s in netns %s: %w", addr, n.Name, err)
	}
	go func() {
		<-ctx.Done()
		_ = l.Close()
	}()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = in.Close() }()
				// Dialled from an ordinary goroutine: the host's namespace.
				out, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer func() { _ = out.Close() }()
				go func() { _, _ = io.Copy(out, in) }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return nil
}
