package relay

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/svcd/svcd/shared/keyrange"
	pb "github.com/svcd/svcd/shared/proto"
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
	st, err := r.Status(ctx, keyrange.Range{})
	if err != nil || st.Targets["a"].Breaker != BreakerClosed {
		t.Fatalf("after the probe's success over gRPC: %+v %v", st.Targets["a"], err)
	}
}

// Status over gRPC gives the targets of the range asked for, with their
// live counters, and nothing of the others; a request that names no range
// (a supervisor built before ranged Status) gets every target.
func TestGRPCStatusOfARange(t *testing.T) {
	e, _ := newTestEngine(Policy{MaxInFlight: 4})
	r := grpcPair(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"d", "b", "e", "a", "c"} {
		if d, err := r.Admit(ctx, name); err != nil || !d.Allowed {
			t.Fatalf("admit %s: %+v %v", name, d, err)
		}
	}
	names := func(st Status) (targets, live string) {
		return fmt.Sprint(slices.Sorted(maps.Keys(st.Targets))), fmt.Sprint(slices.Sorted(maps.Keys(st.Live)))
	}
	for _, c := range []struct {
		keys keyrange.Range
		want string
	}{
		{keyrange.Range{}, "[a b c d e]"},
		{keyrange.Range{After: "b"}, "[c d e]"},
		{keyrange.Range{After: "a", Through: "c", Bounded: true}, "[b c]"},
		{keyrange.Range{Through: "bb", Bounded: true}, "[a b]"},
		{keyrange.Range{None: true}, "[]"},
	} {
		st, err := r.Status(ctx, c.keys)
		if targets, live := names(st); err != nil || targets != c.want || live != c.want || st.Policy.MaxInFlight != 4 {
			t.Errorf("Status(%+v): targets %s, live %s, policy %+v, %v; want %s of both", c.keys, targets, live, st.Policy, err, c.want)
		}
	}
	old, err := r.(*GRPCClient).client.Status(ctx, &pb.RelayStatusRequest{})
	if err != nil || len(old.Targets) != 5 || len(old.Live) != 5 {
		t.Fatalf("Status without a range: %d targets, %d live, %v; want every one", len(old.GetTargets()), len(old.GetLive()), err)
	}
}
