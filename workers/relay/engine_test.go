package relay

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/svcd/svcd/shared/keyrange"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestEngine(p Policy) (*Engine, *clock) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	e := NewEngine(p)
	e.SetClock(c.now)
	return e, c
}

func admit(t *testing.T, e *Engine, target string) Decision {
	t.Helper()
	d, err := e.Admit(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestWindowRefusesOverLimitAndResets(t *testing.T) {
	e, c := newTestEngine(Policy{WindowMs: 1000, WindowMax: 2})
	for i := 0; i < 2; i++ {
		if d := admit(t, e, "a"); !d.Allowed {
			t.Fatalf("request %d refused: %+v", i, d)
		}
		e.Report(context.Background(), Outcome{Target: "a", Status: 200})
	}
	d := admit(t, e, "a")
	if d.Allowed || d.Reason != "rate_limited" || d.RetryAfterMs != 1000 {
		t.Fatalf("third: %+v", d)
	}
	if d := admit(t, e, "b"); !d.Allowed {
		t.Fatal("targets share a window")
	}
	c.add(1001 * time.Millisecond)
	if d := admit(t, e, "a"); !d.Allowed {
		t.Fatalf("after the window: %+v", d)
	}
}

func TestBackoffHonoursRetryAfterAndResetsOnSuccess(t *testing.T) {
	e, c := newTestEngine(Policy{BackoffBaseMs: 100, BackoffMaxMs: 1000, BreakerFailures: 100})
	admit(t, e, "a")
	if ch, _ := e.Report(context.Background(), Outcome{Target: "a", Status: 500}); !ch {
		t.Fatal("a failure is a state change")
	}
	if d := admit(t, e, "a"); d.Allowed || d.Reason != "backoff" || d.RetryAfterMs != 100 {
		t.Fatalf("after one 500: %+v", d)
	}
	c.add(100 * time.Millisecond)
	admit(t, e, "a")
	e.Report(context.Background(), Outcome{Target: "a", Status: 502})
	if d := admit(t, e, "a"); d.RetryAfterMs != 200 {
		t.Fatalf("exponential: %+v", d)
	}
	c.add(200 * time.Millisecond)
	admit(t, e, "a")
	e.Report(context.Background(), Outcome{Target: "a", Status: 429, RetryAfterMs: 5000})
	if d := admit(t, e, "a"); d.RetryAfterMs != 5000 {
		t.Fatalf("Retry-After not honoured: %+v", d)
	}
	c.add(5 * time.Second)
	admit(t, e, "a")
	if ch, _ := e.Report(context.Background(), Outcome{Target: "a", Status: 200}); !ch {
		t.Fatal("recovery is a state change")
	}
	st, _ := e.Status(context.Background(), keyrange.Range{})
	if s := st.Targets["a"]; s.BackoffLevel != 0 || s.BackoffUntilMs != 0 {
		t.Fatalf("not reset: %+v", s)
	}
	// 4xx other than 429 and cancellations do not count.
	admit(t, e, "a")
	if ch, _ := e.Report(context.Background(), Outcome{Target: "a", Status: 404}); ch {
		t.Fatal("404 changed state")
	}
	admit(t, e, "a")
	e.Report(context.Background(), Outcome{Target: "a", Cancelled: true})
	if d := admit(t, e, "a"); !d.Allowed {
		t.Fatalf("after 404 and cancel: %+v", d)
	}
}

func TestBreakerOpensHalfOpensAndCloses(t *testing.T) {
	e, c := newTestEngine(Policy{BackoffBaseMs: 1, BackoffMaxMs: 1, BreakerFailures: 3, BreakerOpenMs: 1000})
	for i := 0; i < 3; i++ {
		if d := admit(t, e, "a"); !d.Allowed {
			t.Fatalf("failure %d refused: %+v", i, d)
		}
		e.Report(context.Background(), Outcome{Target: "a", Status: 0})
		c.add(2 * time.Millisecond)
	}
	if d := admit(t, e, "a"); d.Allowed || d.Reason != "circuit_open" {
		t.Fatalf("open: %+v", d)
	}
	c.add(time.Second)
	probe := admit(t, e, "a")
	if !probe.Allowed || !probe.Changed || !probe.Probe {
		t.Fatalf("half-open probe: %+v", probe)
	}
	if d := admit(t, e, "a"); d.Allowed || d.Reason != "circuit_half_open" {
		t.Fatalf("second request during the probe: %+v", d)
	}
	e.Report(context.Background(), Outcome{Target: "a", Status: 503, Probe: true})
	c.add(2 * time.Millisecond)
	if d := admit(t, e, "a"); d.Reason != "circuit_open" {
		t.Fatalf("failed probe must reopen: %+v", d)
	}
	c.add(time.Second)
	probe = admit(t, e, "a")
	e.Report(context.Background(), Outcome{Target: "a", Status: 200, Probe: probe.Probe})
	st, _ := e.Status(context.Background(), keyrange.Range{})
	if st.Targets["a"].Breaker != BreakerClosed {
		t.Fatalf("probe success must close: %+v", st.Targets["a"])
	}
}

// TestOnlyTheProbeDecidesHalfOpen: a late answer to a request admitted
// before the breaker opened must neither free the probe's place nor close or
// reopen the breaker.
func TestOnlyTheProbeDecidesHalfOpen(t *testing.T) {
	e, c := newTestEngine(Policy{BackoffBaseMs: 1, BackoffMaxMs: 1, BreakerFailures: 1, BreakerOpenMs: 1000, MaxInFlight: 4})
	late := admit(t, e, "a") // admitted while closed; its answer comes late
	if !late.Allowed || late.Probe {
		t.Fatalf("closed admission: %+v", late)
	}
	admit(t, e, "a")
	e.Report(context.Background(), Outcome{Target: "a", Status: 502}) // opens the breaker
	c.add(time.Second + 2*time.Millisecond)
	probe := admit(t, e, "a")
	if !probe.Allowed || !probe.Probe {
		t.Fatalf("probe: %+v", probe)
	}
	for _, status := range []int{200, 503} {
		e.Report(context.Background(), Outcome{Target: "a", Status: status, Probe: late.Probe})
		if d := admit(t, e, "a"); d.Allowed || d.Reason != "circuit_half_open" {
			t.Fatalf("after a late %d the probe's place was given away: %+v", status, d)
		}
		st, _ := e.Status(context.Background(), keyrange.Range{})
		if st.Targets["a"].Breaker != BreakerHalfOpen {
			t.Fatalf("a late %d decided the breaker: %+v", status, st.Targets["a"])
		}
	}
	e.Report(context.Background(), Outcome{Target: "a", Status: 200, Probe: true})
	if st, _ := e.Status(context.Background(), keyrange.Range{}); st.Targets["a"].Breaker != BreakerClosed {
		t.Fatalf("the probe's success must close: %+v", st.Targets["a"])
	}
}

func TestConcurrencyWaitsThenRefusesAndCountsLive(t *testing.T) {
	e := NewEngine(Policy{MaxInFlight: 1, MaxWaitMs: 300})
	if d := admit(t, e, "a"); !d.Allowed {
		t.Fatal(d)
	}
	got := make(chan Decision, 1)
	go func() { d, _ := e.Admit(context.Background(), "a"); got <- d }()
	deadline := time.Now().Add(2 * time.Second)
	for {
		st, _ := e.Status(context.Background(), keyrange.Range{})
		if st.Live["a"].Waiting == 1 && st.Live["a"].InFlight == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting never counted: %+v", st.Live)
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.Report(context.Background(), Outcome{Target: "a", Status: 200})
	if d := <-got; !d.Allowed {
		t.Fatalf("waiter not admitted after a release: %+v", d)
	}
	start := time.Now()
	if d := admit(t, e, "a"); d.Allowed || d.Reason != "busy" || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("full target: %+v after %s", d, time.Since(start))
	}
}

func TestDirtyAndRestore(t *testing.T) {
	e, _ := newTestEngine(Policy{BreakerFailures: 1})
	admit(t, e, "a")
	e.Report(context.Background(), Outcome{Target: "a", Status: 500})
	dirty, _ := e.TakeDirty(context.Background())
	if len(dirty) != 1 || dirty[0].Breaker != BreakerOpen {
		t.Fatalf("dirty %+v", dirty)
	}
	if again, _ := e.TakeDirty(context.Background()); len(again) != 0 {
		t.Fatal("dirty not cleared")
	}
	f, c := newTestEngine(Policy{BreakerFailures: 1})
	_ = c
	f.Restore(context.Background(), dirty)
	if d := admit(t, f, "a"); d.Reason != "circuit_open" {
		t.Fatalf("restored engine admits: %+v", d)
	}
	st, _ := f.Status(context.Background(), keyrange.Range{})
	if len(st.Live) != 0 {
		t.Fatal("in-process counters restored")
	}
}
