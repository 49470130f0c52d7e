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
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/svcd/svcd/workers/pluginkit"
)

// Name is agentd's worker name (svcd worker agentd).
const Name = "agentd"

// ConfigEnv carries the worker's Config as JSON from the supervisor. It holds
// the shared token, so the child's environment never inherits it (see
// childEnv).
const ConfigEnv = "SVCD_AGENTD_CONFIG"

// Health is what the supervisor asks of the agentd worker over gRPC: the
// Codex child's state ("running", "unavailable", ...). go-plugin's own health
// service answers the worker manager's pings; the real work happens on
// agentd's HTTP API, which the main daemon's /v1/agent proxy calls.
type Health interface {
	ChildState(ctx context.Context) (string, error)
}

// Plugin is the go-plugin glue: the worker registers the server half, the
// supervisor dispenses the client half.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl *Daemon // worker side only
}

// The service is one unary method with well-known message types, so it needs
// no generated code: Empty in, the state as a StringValue out.
const childStateMethod = "/svcd.agentd.Agentd/ChildState"

var serviceDesc = grpc.ServiceDesc{
	ServiceName: "svcd.agentd.Agentd",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "ChildState",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			if err := dec(new(emptypb.Empty)); err != nil {
				return nil, err
			}
			state, err := srv.(*GRPCServer).ChildState(ctx)
			return wrapperspb.String(state), err
		}}},
}

// GRPCServer registers the server half.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&serviceDesc, &GRPCServer{d: p.Impl})
	return nil
}

// GRPCClient hands the supervisor the client half.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &GRPCClient{c: c}, nil
}

// GRPCServer is the worker's half.
type GRPCServer struct{ d *Daemon }

// ChildState is the Codex child's state.
func (g *GRPCServer) ChildState(context.Context) (string, error) {
	g.d.mu.Lock()
	defer g.d.mu.Unlock()
	return g.d.childSt.State, nil
}

// GRPCClient is the supervisor's half.
type GRPCClient struct{ c *grpc.ClientConn }

// ChildState asks the worker.
func (g *GRPCClient) ChildState(ctx context.Context) (string, error) {
	out := new(wrapperspb.StringValue)
	if err := g.c.Invoke(ctx, childStateMethod, &emptypb.Empty{}, out); err != nil {
		return "", err
	}
	return out.GetValue(), nil
}

var (
	_ Health = (*GRPCServer)(nil)
	_ Health = (*GRPCClient)(nil)
)

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
