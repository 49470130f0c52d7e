package supervisor

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/clustertls"
	"github.com/svcd/svcd/supervisor/config"
)

// openClusterTLS loads the node's certificate files when cluster TLS is on
// (config.OpenClusterTLS refuses bad files with the setting's name) and
// says at start which transport raft uses.
func openClusterTLS(cfg config.Config, log hclog.Logger) (*clustertls.Holder, error) {
	h, err := cfg.OpenClusterTLS()
	if err != nil {
		return nil, err
	}
	switch {
	case h != nil:
		log.Info("raft and forwarded calls use mutual TLS", "certificate", h.Describe())
	case cfg.PlainOffLoopback():
		log.Warn(`cluster_tls = "off": raft traffic and forwarded API calls (with the caller's token) cross the network unencrypted`, "raft_addr", cfg.RaftAddr)
	}
	return h, nil
}

// ReloadClusterTLS re-reads the cluster TLS certificate, key and CA (the
// SIGHUP reloader list calls it). New connections use the new files at
// once; a refused reload keeps the current ones and returns why. Without
// cluster TLS it does nothing.
func (s *Server) ReloadClusterTLS() error {
	if s.clusterTLS == nil {
		return nil
	}
	what, err := s.clusterTLS.Reload()
	if err != nil {
		s.log.Error("cluster TLS reload failed", "error", err)
		return err
	}
	s.log.Info("cluster TLS reloaded", "certificate", what)
	return nil
}

// serveForwarded answers the calls other nodes forward over the raft port
// (cluster TLS only) with the same handler, guards and token checks as the
// public listener.
func (s *Server) serveForwarded() {
	ln := s.node.ForwardListener()
	if ln == nil {
		return
	}
	// Calls on this channel come from members that passed mutual TLS and
	// the cluster-key challenge; they name this node by whatever address
	// they dialed (a join names the raft address), which the Host guard —
	// a DNS-rebinding defence for browsers, who cannot reach this channel —
	// need not judge: the request is addressed to this node itself.
	h := s.handler
	self := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Host = "localhost"
		h.ServeHTTP(w, r)
	})
	srv := &http.Server{
		Handler:           self,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          s.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			s.log.Warn("forwarded-call listener stopped", "error", err)
		}
	}()
	s.onClose(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout())
		defer cancel()
		_ = srv.Shutdown(ctx)
		return nil
	})
}

// registerClusterRefusals exposes the stream layer's refusal counts as
// svcd_cluster_connections_refused_total{reason} (docs/metrics.md).
func (s *Server) registerClusterRefusals() {
	for _, reason := range raftstore.RefusalReasons {
		c := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "svcd_cluster_connections_refused_total",
			Help:        "Cluster (raft and forwarded-call) connections refused before any raft byte, by reason.",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 {
			if s.node == nil {
				return 0
			}
			return float64(s.node.ConnectionsRefused()[reason])
		})
		if err := s.metricsReg.Register(c); err != nil {
			s.log.Warn("cluster refusal metric not exposed", "error", err)
		}
	}
}

// dialForward is how this node reaches the leader for a forwarded call:
// over the raft port's forward channel with cluster TLS, nil (plain HTTP
// to the leader's API) without.
func (s *Server) dialForward() func(ctx context.Context, raftAddr string) (net.Conn, error) {
	if !s.node.ClusterTLS() {
		return nil
	}
	return s.node.DialForward
}
