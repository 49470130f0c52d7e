package agentd

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/svcd/svcd/shared/logging"
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
	Impl *GRPCServer // worker side only
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
	s.RegisterService(&serviceDesc, p.Impl)
	return nil
}

// GRPCClient hands the supervisor the client half.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &GRPCClient{c: c}, nil
}

// GRPCServer is the worker's half. Its daemon arrives once the worker holds
// agentd's port (see ServeWorker); until then the state is "starting".
type GRPCServer struct{ d atomic.Pointer[Daemon] }

// ChildState is the Codex child's state.
func (g *GRPCServer) ChildState(context.Context) (string, error) {
	d := g.d.Load()
	if d == nil {
		return "starting", nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.childSt.State, nil
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
//
// A rolling restart starts the new instance while the old one still serves,
// and both cannot own agentd's port, store and Codex child at once. So the new
// instance answers the handshake at once but opens the store and starts the
// child only once it holds the port; the old one, told to stop, first stops
// its daemon (child and store) and only then lets the port go.
func ServeWorker(log hclog.Logger) error {
	var cfg Config
	if err := json.Unmarshal([]byte(os.Getenv(ConfigEnv)), &cfg); err != nil {
		return fmt.Errorf("%s: %w", ConfigEnv, err)
	}
	_ = os.Unsetenv(ConfigEnv)
	cfg.Defaults()
	ctx, cancel := context.WithCancel(context.Background())
	srv := &GRPCServer{}
	tel := pluginkit.NewTelemetry()
	served := make(chan struct{})
	go func() {
		defer close(served)
		ln, err := listenRetry(ctx, cfg.Listen, 30*time.Second)
		if err != nil {
			if ctx.Err() == nil {
				log.Error("agentd cannot listen", "listen", cfg.Listen, "error", err)
				os.Exit(1)
			}
			return
		}
		d, err := New(cfg, logging.NewWorkerSlog())
		if err != nil {
			log.Error("agentd cannot start", "error", err)
			os.Exit(1)
		}
		tel.Registry.MustRegister(d.Collectors()...)
		srv.d.Store(d)
		if err := d.ServeListener(ctx, ln); err != nil {
			log.Error("agentd listener failed", "error", err)
			os.Exit(1)
		}
	}()
	stop := func() {
		if d := srv.d.Load(); d != nil {
			d.Close()
		}
		cancel()
		<-served
	}
	pluginkit.Serve(Name, &Plugin{Impl: srv}, 4<<20, log, tel, stop)
	return nil
}

// listenRetry listens on addr, retrying while another instance holds it.
func listenRetry(ctx context.Context, addr string, limit time.Duration) (net.Listener, error) {
	deadline := time.Now().Add(limit)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			return ln, err
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
