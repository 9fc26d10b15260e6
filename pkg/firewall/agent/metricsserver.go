package agent

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// metricsServer serves /metrics on one address at a time, which follows the
// internal interface's address.
type metricsServer struct {
	handler http.Handler
	log     *slog.Logger

	addr   netip.AddrPort
	device string
	server *http.Server
	// logged is the last problem logged, which is not logged again at
	// every source read.
	logged string
}

// logOnce logs a problem unless it is the one logged last.
func (s *metricsServer) logOnce(msg string, err error) {
	if text := msg + err.Error(); text != s.logged {
		s.logged = text
		s.log.Error(msg, "error", err)
	}
}

// ensure serves on addr, bound to device, closing the listener on another
// address first; an invalid addr closes it. The socket is bound to the
// internal interface too (SO_BINDTODEVICE), so that even without the
// table's guard a packet from another interface finds no listener; bound
// to a VRF device, it also takes the VRF's traffic.
func (s *metricsServer) ensure(ctx context.Context, addr netip.AddrPort, device string) error {
	if s.server != nil && s.addr == addr && s.device == device {
		return nil
	}
	s.close()
	if !addr.IsValid() {
		return nil
	}
	lc := &net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var bindErr error
		if err := c.Control(func(fd uintptr) { bindErr = syscall.BindToDevice(int(fd), device) }); err != nil {
			return err
		}
		return bindErr
	}}
	l, err := lc.Listen(ctx, "tcp", addr.String())
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.handler)
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.addr, s.device, s.server, s.logged = addr, device, server, ""
	s.log.Info("serving metrics to the shoot", "address", addr.String(), "path", "/metrics")
	go func() {
		if err := server.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serving metrics to the shoot", "error", err)
		}
	}()
	return nil
}

// close stops serving; nil serves nothing.
func (s *metricsServer) close() {
	if s == nil || s.server == nil {
		return
	}
	_ = s.server.Close()
	s.server, s.addr = nil, netip.AddrPort{}
}

// address is where the metrics are served, not valid when they are not.
func (s *metricsServer) address() netip.AddrPort {
	if s == nil || s.server == nil {
		return netip.AddrPort{}
	}
	return s.addr
}

// reported is the address as the agent reports it, "" when the metrics are
// not served.
func (s *metricsServer) reported() string {
	if addr := s.address(); addr.IsValid() {
		return addr.String()
	}
	return ""
}
