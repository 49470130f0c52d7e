package pluginkit

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/svcd/svcd/shared/reqid"
)

// FlowWindow is the fixed HTTP/2 flow-control window of worker connections,
// per stream and per connection. A fixed window turns off gRPC's BDP
// estimation, which on every data frame received while no probe was out
// sends a window update and a PING, and the peer answers with a PING ack:
// two extra writes and two extra wake-ups, in both directions, on each
// small call such as an exec of `true`. Over a local socket there is no
// bandwidth-delay product to find; 16 MB is the largest window the
// estimator would have grown to.
const FlowWindow = 16 << 20

// MessageOverhead is added to a payload cap to size gRPC message limits:
// room for the other fields of a message around its largest bytes field.
const MessageOverhead = 1 << 20

// Serve runs the worker's gRPC plugin server until the supervisor closes it.
// maxMsg raises gRPC's 4 MB default on both directions so a payload at the
// configured cap fits. Nothing may be written to stdout before this call:
// go-plugin's handshake line is the first thing the supervisor reads there.
//
// The worker manager starts every worker with Pdeathsig SIGTERM, so SIGTERM
// here means "the supervisor is gone" (or a shutdown by hand): Serve runs
// onStop (kill what the worker started) and exits. It installs its own
// handler because svcd's main turns SIGTERM into a context cancel, which a
// blocked plugin server would never notice — the worker would be orphaned.
//
// tel is the worker's own metrics (nil: only the gRPC call series); the
// supervisor gathers them over this same gRPC server.
func Serve(name string, p plugin.Plugin, maxMsg int, log hclog.Logger, tel *Telemetry, onStop ...func()) {
	if tel == nil {
		tel = NewTelemetry()
	}
	if os.Getppid() == 1 {
		// The supervisor died before Pdeathsig was armed: nobody to serve.
		log.Error("parent process already gone; exiting")
		os.Exit(1)
	}
	// The supervisor holds the read ends of this worker's stdout and stderr.
	// When it dies they break, and Go's default turns a write to a broken fd 1
	// or 2 (any log line) into death by SIGPIPE, before the stop hooks below
	// have killed what the worker started. Notifying makes such writes fail
	// with EPIPE instead; ignoring would not do, since an ignored signal is
	// inherited by the commands a worker executes.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-sigs
		// Stop hooks first: the log line may go nowhere if the supervisor is gone.
		for _, fn := range onStop {
			fn()
		}
		log.Warn("stopped on signal", "signal", sig.String())
		os.Exit(1)
	}()
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake(),
		Plugins:         plugin.PluginSet{name: p},
		Logger:          log,
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg),
				grpc.StaticStreamWindowSize(FlowWindow), grpc.StaticConnWindowSize(FlowWindow))
			// Each call's context carries the supervisor's request id.
			opts = append(opts, reqid.ServerInterceptors(log)...)
			if os.Getenv("SVCD_METRICS_OFF") != "1" { // benchmarks only: what the interceptors cost
				opts = append(opts, tel.ServerOptions()...)
			}
			s := grpc.NewServer(opts...)
			tel.Register(s)
			return s
		},
	})
	for _, fn := range onStop {
		fn()
	}
}

// ClientOptions are the settings of one worker's go-plugin client.
type ClientOptions struct {
	Name   string
	Plugin plugin.Plugin
	MaxMsg int
	Logger hclog.Logger
}

// ClientConfig builds the go-plugin client configuration for a worker: gRPC
// only (go-plugin's default would be net/rpc only), AutoMTLS, raised message
// limits. The caller supplies the command (with its SysProcAttr and Env).
func ClientConfig(o ClientOptions) *plugin.ClientConfig {
	return &plugin.ClientConfig{
		HandshakeConfig:  Handshake(),
		Plugins:          plugin.PluginSet{o.Name: o.Plugin},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		Logger:           o.Logger,
		// The command's environment is built by the caller on purpose (the
		// shared token must not reach workers or their children).
		SkipHostEnv: true,
		// The request id of a call's context goes along in its metadata.
		GRPCDialOptions: append([]grpc.DialOption{
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(o.MaxMsg), grpc.MaxCallSendMsgSize(o.MaxMsg)),
			grpc.WithStaticStreamWindowSize(FlowWindow), grpc.WithStaticConnWindowSize(FlowWindow),
		}, reqid.ClientInterceptors()...),
	}
}
