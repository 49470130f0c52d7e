package hostops

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/svcd/svcd/shared/proto"
	"github.com/svcd/svcd/workers/pluginkit"
)

// The hop benchmark runs this test binary again as a second process, in one
// of two roles chosen by hopChildEnv: the real hostops worker behind
// go-plugin (AutoMTLS over its unix socket, as the supervisor runs it), or
// a bare gRPC server (no TLS, same unix-socket transport, same HostOps
// server and a health service) for the baseline.
const (
	hopChildEnv  = "SVCD_HOSTOPS_HOP_CHILD"
	hopSocketEnv = "SVCD_HOSTOPS_HOP_SOCKET"
)

func TestMain(m *testing.M) {
	switch os.Getenv(hopChildEnv) {
	case "plugin":
		if err := Serve(hclog.NewNullLogger()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "bare":
		serveBareHop(os.Getenv(hopSocketEnv))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveBareHop is the baseline's server: plain gRPC on a unix socket with
// the worker's own settings (one P, fixed flow windows).
func serveBareHop(path string) {
	runtime.GOMAXPROCS(1)
	sp := pluginkit.NewSpawner()
	impl, err := NewLocal(DefaultConfig(), hclog.NewNullLogger(), sp, os.Environ())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := grpc.NewServer(grpc.StaticStreamWindowSize(pluginkit.FlowWindow), grpc.StaticConnWindowSize(pluginkit.FlowWindow))
	hs := health.NewServer()
	hs.SetServingStatus(plugin.GRPCServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, hs)
	(&Plugin{Impl: impl}).GRPCServer(nil, s)
	_ = s.Serve(ln)
}

func hopChildCmd(b testing.TB, role string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), hopChildEnv+"="+role), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// startBareHop starts the baseline server and dials it.
func startBareHop(b *testing.B) *grpc.ClientConn {
	sock := filepath.Join(b.TempDir(), "hop.sock")
	cmd := hopChildCmd(b, "bare", hopSocketEnv+"="+sock)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("bare hop server did not listen")
		}
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStaticStreamWindowSize(pluginkit.FlowWindow), grpc.WithStaticConnWindowSize(pluginkit.FlowWindow))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return conn
}

// startPluginHop starts the real worker through go-plugin, configured as
// the worker manager configures it.
func startPluginHop(b *testing.B) (*GRPCClient, *grpc.ClientConn) {
	cfg := pluginkit.ClientConfig(pluginkit.ClientOptions{Name: Name, Plugin: &Plugin{}, MaxMsg: DefaultConfig().MaxMessage(pluginkit.MessageOverhead), Logger: hclog.NewNullLogger()})
	cfg.Cmd = hopChildCmd(b, "plugin")
	client := plugin.NewClient(cfg)
	b.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		b.Fatal(err)
	}
	raw, err := rpc.Dispense(Name)
	if err != nil {
		b.Fatal(err)
	}
	return raw.(*GRPCClient), rpc.(*plugin.GRPCClient).Conn
}

// BenchmarkGRPCHop: what one call to the hostops worker costs over its
// go-plugin connection, against the same calls on a bare gRPC connection
// between two processes. "unary" is a health check (the cheapest call
// there is); "exec_nostart" is HostOps.Exec refused inside the worker
// (missing cwd) so it crosses the hop and starts nothing; "exec_true" runs
// `true`; "hop_*" are the same two calls over the worker's exec hop. Run
// with scripts/bench-micro GRPCHop ./workers/hostops/.
func BenchmarkGRPCHop(b *testing.B) {
	bare := startBareHop(b)
	bareOps := &GRPCClient{client: pbHostOpsClient(bare)}
	pluginOps, pluginConn := startPluginHop(b)
	ctx := context.Background()
	missing := filepath.Join(b.TempDir(), "missing")
	unary := func(conn *grpc.ClientConn) func(b *testing.B) {
		hc := healthpb.NewHealthClient(conn)
		return func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: plugin.GRPCServiceName}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	execCall := func(ops HostOps, req ExecRequest, wantOK bool) func(b *testing.B) {
		return func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				res, err := ops.Exec(ctx, req, nil)
				if err != nil || res.OK != wantOK {
					b.Fatal(res, err)
				}
			}
		}
	}
	nostart := ExecRequest{Command: "true", Cwd: missing, Timeout: 10 * time.Second}
	run := ExecRequest{Command: "true", Timeout: 10 * time.Second}
	b.Run("baseline_bare_unary", unary(bare))
	b.Run("plugin_unary", unary(pluginConn))
	b.Run("bare_exec_nostart", execCall(bareOps, nostart, false))
	b.Run("plugin_exec_nostart", execCall(pluginOps, nostart, false))
	b.Run("bare_exec_true", execCall(bareOps, run, true))
	b.Run("plugin_exec_true", execCall(pluginOps, run, true))
	// The same worker with its exec hop (hop_client.go): no gRPC per exec.
	hopOps := startHopWorker(b).ops
	b.Run("hop_exec_nostart", execCall(hopOps, nostart, false))
	b.Run("hop_exec_true", execCall(hopOps, run, true))
}

func pbHostOpsClient(conn *grpc.ClientConn) pb.HostOpsClient { return pb.NewHostOpsClient(conn) }
