package agentd

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/svcd/svcd/workers/pluginkit"
)

// Name is agentd's worker name (svcd worker agentd).
const Name = "agentd"

// ConfigEnv carries the worker's Config as JSON from the supervisor. It holds
// the shared token, so the child's environment never inherits it (see
// childEnv).
const ConfigEnv = "SVCD_AGENTD_CONFIG"

// Health is what the supervisor asks of the agentd worker: its own state and
// the Codex child's ("running", "unavailable", ...). The real work happens on
// agentd's HTTP API, which the main daemon's /v1/agent proxy calls.
type Health interface {
	Check(ctx context.Context) (string, error)
}

// Plugin is the go-plugin glue: the worker registers the server half, the
// supervisor dispenses the client half.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl *Daemon // worker side only
}

// GRPCServer serves gRPC health, SERVING when the Codex child runs.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	healthpb.RegisterHealthServer(s, &healthServer{d: p.Impl})
	return nil
}

// GRPCClient hands the supervisor the client half.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &HealthClient{c: healthpb.NewHealthClient(c)}, nil
}

type healthServer struct {
	healthpb.UnimplementedHealthServer
	d *Daemon
}

func (h *healthServer) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.d.mu.Lock()
	state := h.d.childSt.State
	h.d.mu.Unlock()
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if state == "running" {
		st = healthpb.HealthCheckResponse_SERVING
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

// HealthClient is the supervisor's half.
type HealthClient struct{ c healthpb.HealthClient }

// Check reports SERVING or NOT_SERVING (child not running).
func (h *HealthClient) Check(ctx context.Context) (string, error) {
	r, err := h.c.Check(ctx, &healthpb.HealthCheckRequest{Service: Name})
	if err != nil {
		return "", err
	}
	return r.Status.String(), nil
}

// EncodeConfig is the ConfigEnv value for cfg.
func EncodeConfig(cfg Config) (string, error) {
	b, err := json.Marshal(cfg)
	return string(b), err
}

// ServeWorker is `svcd worker agentd`: the daemon and its HTTP listener in a
// go-plugin worker the supervisor restarts on failure.
func ServeWorker(log hclog.Logger) error {
	var cfg Config
	if err := json.Unmarshal([]byte(os.Getenv(ConfigEnv)), &cfg); err != nil {
		return fmt.Errorf("%s: %w", ConfigEnv, err)
	}
	_ = os.Unsetenv(ConfigEnv)
	d, err := New(cfg, slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- d.Serve(ctx) }()
	go func() {
		if err := <-errc; err != nil {
			log.Error("agentd listener failed", "error", err)
			os.Exit(1)
		}
	}()
	pluginkit.Serve(Name, &Plugin{Impl: d}, 4<<20, log, func() { cancel(); d.Close() })
	return nil
}
