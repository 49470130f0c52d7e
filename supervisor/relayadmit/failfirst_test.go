package relayadmit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcd/svcd/workers/relay"
)

// heldFailure holds the Lease call that delivers a failure until release is
// closed; every other call passes.
type heldFailure struct {
	Backend
	held    chan struct{}
	release chan struct{}
}

func (h *heldFailure) Lease(ctx context.Context, r relay.LeaseRequest) (relay.LeaseReply, error) {
	for _, o := range r.Outcomes {
		if relay.IsFailure(o) {
			select {
			case h.held <- struct{}{}:
			default:
			}
			<-h.release
			break
		}
	}
	return h.Backend.Lease(ctx, r)
}

// A request that comes while Run's batch carries the failure that trips the
// breaker is decided after the engine has it, not beside it.
// TestAdmitterBreakerTripsOnTime failed that way under load: the fourth
// request was admitted past three failures.
func TestAdmitterLeaseWaitsForAFailureOnItsWay(t *testing.T) {
	w := startWorker(t, "127.0.0.1:0", relay.Policy{BreakerFailures: 1, BackoffBaseMs: 1, BackoffMaxMs: 1, BreakerOpenMs: 600_000, MaxInFlight: 100})
	h := &heldFailure{Backend: w.client(), held: make(chan struct{}, 1), release: make(chan struct{})}
	a := New(h, Options{})
	running(t, a)
	var once sync.Once
	free := func() { once.Do(func() { close(h.release) }) }
	t.Cleanup(free)
	ctx := context.Background()
	if d, err := a.Admit(ctx, "t"); err != nil || !d.Allowed {
		t.Fatalf("first admit: %+v %v", d, err)
	}
	a.Report(relay.Outcome{Target: "t", Status: 503})
	<-h.held // Run's batch with the failure is on its way
	type answer struct {
		d   relay.Decision
		err error
	}
	res := make(chan answer, 1)
	go func() {
		d, err := a.Admit(ctx, "t")
		res <- answer{d, err}
	}()
	// Not a timing assertion: the Admit cannot answer before the release
	// with the fix; without it, it answers at once from the engine.
	select {
	case r := <-res:
		t.Fatalf("decided while the failure was on its way: %+v %v", r.d, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	free()
	if r := <-res; r.err != nil || r.d.Allowed || r.d.Reason != "circuit_open" {
		t.Fatalf("after the tripping failure: %+v %v", r.d, r.err)
	}
}

// heldSuccess holds the first Lease call that delivers only successes until
// release is closed, and notes a call with a failure that comes meanwhile.
type heldSuccess struct {
	Backend
	held      chan struct{}
	release   chan struct{}
	holding   atomic.Bool
	overtaken chan struct{} // closed when a failure went past the held successes
	once      sync.Once
}

func (h *heldSuccess) Lease(ctx context.Context, r relay.LeaseRequest) (relay.LeaseReply, error) {
	failure := false
	for _, o := range r.Outcomes {
		failure = failure || relay.IsFailure(o)
	}
	switch {
	case failure && h.holding.Load():
		h.once.Do(func() { close(h.overtaken) })
	case len(r.Outcomes) > 0 && !failure && h.holding.CompareAndSwap(false, true):
		select {
		case h.held <- struct{}{}:
		default:
		}
		<-h.release
		defer h.holding.Store(false)
	}
	return h.Backend.Lease(ctx, r)
}

// A failure goes after the successes already on their way: delivered first,
// the late success would close the breaker it opened.
func TestAdmitterFailureGoesAfterTheSuccessesOut(t *testing.T) {
	w := startWorker(t, "127.0.0.1:0", relay.Policy{BreakerFailures: 1, BackoffBaseMs: 1, BackoffMaxMs: 1, BreakerOpenMs: 600_000, MaxInFlight: 100})
	h := &heldSuccess{Backend: w.client(), held: make(chan struct{}, 1), release: make(chan struct{}), overtaken: make(chan struct{})}
	a := New(h, Options{})
	running(t, a)
	var once sync.Once
	free := func() { once.Do(func() { close(h.release) }) }
	t.Cleanup(free)
	ctx := context.Background()
	if d, err := a.Admit(ctx, "t"); err != nil || !d.Allowed {
		t.Fatalf("first admit: %+v %v", d, err)
	}
	a.Report(relay.Outcome{Target: "t", Status: 200})
	<-h.held // Run's batch with the success is on its way
	if d, err := a.Admit(ctx, "t"); err != nil || !d.Allowed {
		t.Fatalf("second admit (a local token): %+v %v", d, err)
	}
	a.Report(relay.Outcome{Target: "t", Status: 503})
	res := make(chan relay.Decision, 1)
	go func() {
		d, _ := a.Admit(ctx, "t") // its lease carries the failure
		res <- d
	}()
	// Not a timing assertion: with the fix the failure cannot go past the
	// held successes; without it, it does at once.
	select {
	case <-h.overtaken:
		t.Fatal("the failure was sent past the successes still on their way")
	case <-time.After(100 * time.Millisecond):
	}
	free()
	if d := <-res; d.Allowed || d.Reason != "circuit_open" {
		t.Fatalf("after the failure: %+v", d)
	}
	if st, _ := w.target("t"); st.Breaker != relay.BreakerOpen {
		t.Fatalf("breaker %q after the failure, want open", st.Breaker)
	}
}
