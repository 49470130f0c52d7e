package supervisor

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/shared/api"
)

// Starting serves the daemon's listener from the moment it is bound, before
// New has opened raft and built the routes (issue 33): a client that
// connects meanwhile gets 503 starting with Retry-After at once instead of
// a connection that hangs for as long as the start takes. Serve hands the
// same listener and HTTP server over to the finished Server.
type Starting struct {
	srv     *http.Server
	handler atomic.Pointer[http.Handler]
	errc    chan error
}

// ServeStarting answers on ln with 503 starting until ServeStarted.
func ServeStarting(ln net.Listener, log hclog.Logger) *Starting {
	st := &Starting{errc: make(chan error, 1)}
	st.srv = &http.Server{
		Handler:           http.HandlerFunc(st.serveHTTP),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	go func() { st.errc <- st.srv.Serve(ln) }()
	return st
}

func (st *Starting) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if h := st.handler.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Retry-After", "1")
	api.WriteError(w, api.Unavailable("starting", "svcd is starting (opening its data and joining its cluster); retry shortly"))
}

// Abort stops answering and closes the listener (New failed).
func (st *Starting) Abort() { _ = st.srv.Close() }

// Serve answers on ln until ctx ends, then stops accepting, lets requests in
// flight finish within the shutdown timeout and shuts raft down.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.ServeStarted(ctx, ServeStarting(ln, s.log), ln.Addr())
}

// ServeStarted makes st answer with this server from now on, until ctx
// ends; then as Serve.
func (s *Server) ServeStarted(ctx context.Context, st *Starting, addr net.Addr) error {
	st.handler.Store(&s.handler)
	s.log.Info("listening", "address", addr.String(), "data_dir", s.cfg.DataDir, "node_id", s.cfg.NodeID)
	s.logPanel(addr)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-st.errc:
	}
	s.log.Info("shutting down", "timeout_ms", s.cfg.ShutdownMs)
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout())
	defer cancel()
	if err := st.srv.Shutdown(sctx); err != nil {
		s.log.Warn("requests still in flight at shutdown deadline were cut", "error", err)
	}
	if err := s.Close(); err != nil && serveErr == nil {
		serveErr = err
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}
