package relayadmit

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/svcd/svcd/shared/keyrange"
	"github.com/svcd/svcd/workers/relay"
)

// worker serves a real engine through the relay plugin's gRPC server half
// on a fixed loopback address, so it can be stopped (a crash) and a fresh
// engine served again where the client reconnects.
type worker struct {
	t    *testing.T
	addr string
	srv  *grpc.Server
	e    *relay.Engine
}

func startWorker(t *testing.T, addr string, p relay.Policy) *worker {
	t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the old listener's port may take a moment to free
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	w := &worker{t: t, addr: ln.Addr().String(), srv: grpc.NewServer(), e: relay.NewEngine(p)}
	if err := (&relay.Plugin{Impl: w.e}).GRPCServer(nil, w.srv); err != nil {
		t.Fatal(err)
	}
	go w.srv.Serve(ln)
	t.Cleanup(w.srv.Stop)
	return w
}

func (w *worker) client() Backend {
	conn, err := grpc.NewClient(w.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { conn.Close() })
	c, err := (&relay.Plugin{}).GRPCClient(context.Background(), nil, conn)
	if err != nil {
		w.t.Fatal(err)
	}
	return c.(Backend)
}

func (w *worker) target(name string) (relay.TargetState, relay.Live) {
	st, _ := w.e.Status(context.Background(), keyrange.Range{})
	return st.Targets[name], st.Live[name]
}

func running(t *testing.T, a *Admitter) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Many concurrent requests: exactly the window's worth is admitted, the rest
// refused as rate_limited, and once outcomes are delivered and unused tokens
// given back the engine's counts match what really happened.
func TestAdmitterKeepsTheWindowLimit(t *testing.T) {
	w := startWorker(t, "127.0.0.1:0", relay.Policy{WindowMax: 37, MaxInFlight: 1000, WindowMs: 600_000})
	a := New(w.client(), Options{Want: 8})
	running(t, a)
	var allowed, limited atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				d, err := a.Admit(context.Background(), "t")
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed.Add(1)
					a.Report(relay.Outcome{Target: "t", Status: 200})
				} else if d.Reason == "rate_limited" {
					limited.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 37 || limited.Load() != 80-37 {
		t.Fatalf("allowed %d, rate_limited %d; want 37 and 43", allowed.Load(), limited.Load())
	}
	eventually(t, "outcomes delivered, tokens back", func() bool {
		st, live := w.target("t")
		return a.Pending() == 0 && live.InFlight == 0 && st.Admitted == 37 && st.WindowCount == 37
	})
}

// The breaker trips after exactly breaker_failures sequential failures, as
// with one Admit and Report per request: a failure ends local admission and
// the next request's lease delivers it before anything is decided.
func TestAdmitterBreakerTripsOnTime(t *testing.T) {
	w := startWorker(t, "127.0.0.1:0", relay.Policy{BreakerFailures: 3, BackoffBaseMs: 1, BackoffMaxMs: 1, BreakerOpenMs: 600_000, MaxInFlight: 100})
	a := New(w.client(), Options{})
	running(t, a)
	ctx := context.Background()
	for i := 0; i < 5; i++ { // successes first: the target holds local tokens
		if d, _ := a.Admit(ctx, "t"); !d.Allowed {
			t.Fatalf("admit %d: %+v", i, d)
		}
		a.Report(relay.Outcome{Target: "t", Status: 200})
	}
	for i := 0; i < 3; i++ {
		if i > 0 {
			// The previous failure's 1 ms backoff runs from when the engine
			// heard it, which may be after the Report (Run's batch can be on
			// its way; under load, for longer than any fixed sleep).
			eventually(t, "the previous failure's backoff over", func() bool {
				st, _ := w.target("t")
				return st.BreakerFailures == i && time.Now().UnixMilli() > st.BackoffUntilMs
			})
		}
		d, err := a.Admit(ctx, "t")
		if err != nil || !d.Allowed {
			t.Fatalf("failure %d not admitted: %+v %v", i, d, err)
		}
		a.Report(relay.Outcome{Target: "t", Status: 503})
	}
	// No wait here: the breaker is open whatever the backoff, and the
	// third failure reaches the engine before this request is decided.
	if d, err := a.Admit(ctx, "t"); err != nil || d.Allowed || d.Reason != "circuit_open" {
		t.Fatalf("after 3 failures: %+v %v", d, err)
	}
}

// A worker crash: outcomes queued while it is down are kept and reach the
// restarted engine; admission goes on from the lease until it runs out and
// then fails closed until the worker is back.
func TestAdmitterOutcomesSurviveAWorkerCrash(t *testing.T) {
	p := relay.Policy{BreakerFailures: 10, BackoffBaseMs: 1, BackoffMaxMs: 1, MaxInFlight: 100}
	w := startWorker(t, "127.0.0.1:0", p)
	a := New(w.client(), Options{Retry: 10 * time.Millisecond})
	running(t, a)
	ctx := context.Background()
	if d, err := a.Admit(ctx, "ok"); err != nil || !d.Allowed {
		t.Fatalf("first admit: %+v %v", d, err)
	}
	granted := time.Now()
	w.srv.Stop() // the worker dies
	if d, err := a.Admit(ctx, "ok"); err != nil || !d.Allowed {
		if time.Since(granted) < relay.LeaseTTL/2 {
			t.Fatalf("admit from the lease with the worker down: %+v %v", d, err)
		}
	}
	a.Report(relay.Outcome{Target: "ok", Status: 200})
	a.Report(relay.Outcome{Target: "fail", Status: 500})
	a.Report(relay.Outcome{Target: "fail", Status: 502})
	time.Sleep(relay.LeaseTTL + 20*time.Millisecond) // the lease runs out
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if d, err := a.Admit(short, "ok"); err == nil {
		t.Fatalf("admitted with the lease expired and the worker down: %+v", d)
	}
	if a.Pending() < 3 {
		t.Fatalf("queued outcomes lost while the worker is down: %d pending", a.Pending())
	}
	w2 := startWorker(t, w.addr, p) // restarted, empty engine
	eventually(t, "queued outcomes delivered to the restarted engine", func() bool {
		st, _ := w2.target("fail")
		return a.Pending() == 0 && st.BreakerFailures == 2 && st.LastStatus == 502
	})
	if d, err := a.Admit(ctx, "ok"); err != nil || !d.Allowed {
		t.Fatalf("admit after the restart: %+v %v", d, err)
	}
}

// Callers that find no tokens at the same moment each take a lease; none of
// the tokens is lost: when all is delivered the engine counts exactly the
// requests that ran and nothing stays in flight.
func TestAdmitterConcurrentLeasesLoseNoTokens(t *testing.T) {
	w := startWorker(t, "127.0.0.1:0", relay.Policy{WindowMax: 100_000, MaxInFlight: 10_000, WindowMs: 600_000})
	a := New(w.client(), Options{Want: 4})
	running(t, a)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				d, err := a.Admit(context.Background(), "t")
				if err != nil || !d.Allowed {
					t.Errorf("admit: %+v %v", d, err)
					return
				}
				a.Report(relay.Outcome{Target: "t", Status: 200})
			}
		}()
	}
	wg.Wait()
	eventually(t, "every token used or given back", func() bool {
		st, live := w.target("t")
		return a.Pending() == 0 && live.InFlight == 0 && st.Admitted == 800 && st.WindowCount == 800
	})
}

// Callers arriving together with no tokens share one lease: a grant that
// takes the whole window serves them all instead of the rest being refused.
func TestAdmitterCallersShareOneLease(t *testing.T) {
	for round := 0; round < 5; round++ {
		w := startWorker(t, "127.0.0.1:0", relay.Policy{WindowMax: 20, MaxInFlight: 1000, WindowMs: 600_000})
		a := New(w.client(), Options{Want: 32})
		var allowed, limited atomic.Int64
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				d, err := a.Admit(context.Background(), "t")
				switch {
				case err != nil:
					t.Error(err)
				case d.Allowed:
					allowed.Add(1)
				case d.Reason == "rate_limited":
					limited.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if allowed.Load() != 20 || limited.Load() != 12 {
			t.Fatalf("round %d: %d allowed, %d rate_limited; want 20 and 12", round, allowed.Load(), limited.Load())
		}
	}
}
