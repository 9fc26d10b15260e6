package agent

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// metricsServer serves /metrics on one address at a time, which follows the
// internal interface's address.
type metricsServer struct {
	handler http.Handler
	log     *slog.Logger

	addr   netip.AddrPort
	server *http.Server
}

// ensure serves on addr, closing the listener on another address first; an
// invalid addr closes it.
func (s *metricsServer) ensure(ctx context.Context, addr netip.AddrPort) error {
	if s.server != nil && s.addr == addr {
		return nil
	}
	s.close()
	if !addr.IsValid() {
		return nil
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr.String())
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.handler)
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.addr, s.server = addr, server
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
