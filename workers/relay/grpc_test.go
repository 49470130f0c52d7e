package relay

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// grpcPair serves an engine through the plugin's gRPC server half on a
// loopback listener and returns the client half the supervisor would use.
func grpcPair(t *testing.T, e *Engine) Relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	if err := (&Plugin{Impl: e}).GRPCServer(nil, srv); err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c, err := (&Plugin{}).GRPCClient(context.Background(), nil, conn)
	if err != nil {
		t.Fatal(err)
	}
	return c.(Relay)
}

// TestGRPCHalvesCarryTheProbe drives a breaker through open and half-open
// over real gRPC: the probe mark must survive both directions, or a late
// report could decide the breaker.
func TestGRPCHalvesCarryTheProbe(t *testing.T) {
	e, c := newTestEngine(Policy{BackoffBaseMs: 1, BackoffMaxMs: 1, BreakerFailures: 1, BreakerOpenMs: 1000, MaxInFlight: 4})
	r := grpcPair(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	d, err := r.Admit(ctx, "a")
	if err != nil || !d.Allowed || d.Probe {
		t.Fatalf("closed admit: %+v %v", d, err)
	}
	if changed, err := r.Report(ctx, Outcome{Target: "a", Status: 503, RetryAfterMs: 5}); err != nil || !changed {
		t.Fatalf("failure report: %v %v", changed, err)
	}
	c.add(time.Second + 10*time.Millisecond)
	probe, err := r.Admit(ctx, "a")
	if err != nil || !probe.Allowed || !probe.Probe || !probe.Changed {
		t.Fatalf("half-open admit over gRPC: %+v %v", probe, err)
	}
	if _, err := r.Report(ctx, Outcome{Target: "a", Status: 200, Probe: probe.Probe}); err != nil {
		t.Fatal(err)
	}
	st, err := r.Status(ctx)
	if err != nil || st.Targets["a"].Breaker != BreakerClosed {
		t.Fatalf("after the probe's success over gRPC: %+v %v", st.Targets["a"], err)
	}
}
