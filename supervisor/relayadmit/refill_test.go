package relayadmit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcd/svcd/workers/relay"
)

// gatedLeaser holds every lease call that asks for tokens, after the first,
// until gate is closed; outcome-only batches pass.
type gatedLeaser struct {
	Backend
	gate    chan struct{}
	held    chan struct{}
	askings atomic.Int64
}

func (g *gatedLeaser) Lease(ctx context.Context, r relay.LeaseRequest) (relay.LeaseReply, error) {
	if len(r.Want) > 0 && g.askings.Add(1) > 1 {
		select {
		case g.held <- struct{}{}:
		default:
		}
		<-g.gate
	}
	return g.Backend.Lease(ctx, r)
}

func newGated(t *testing.T, p relay.Policy, want int) (*worker, *gatedLeaser, *Admitter) {
	w := startWorker(t, "127.0.0.1:0", p)
	g := &gatedLeaser{Backend: w.client(), gate: make(chan struct{}), held: make(chan struct{}, 1)}
	t.Cleanup(func() {
		select {
		case <-g.gate:
		default:
			close(g.gate)
		}
	})
	a := New(g, Options{Want: want})
	running(t, a)
	return w, g, a
}

func admitOK(t *testing.T, a *Admitter, what string) {
	t.Helper()
	d, err := a.Admit(context.Background(), "t")
	if err != nil || !d.Allowed {
		t.Fatalf("%s: %+v %v", what, d, err)
	}
	a.Report(relay.Outcome{Target: "t", Status: 200})
}

// Tokens are refilled ahead: once a pool is at a quarter of Want, one lease
// goes out in the background and the tokens left keep admitting while it is
// out (here it is held: the admissions cannot have waited for it). Its grant
// then admits without another lease, and every count settles.
func TestAdmitterRefillsAhead(t *testing.T) {
	w, g, a := newGated(t, relay.Policy{WindowMax: 1000, MaxInFlight: 1000, WindowMs: 600_000}, 16)
	for i := 0; i < 12; i++ { // the first lease's 16 tokens, down to 4
		admitOK(t, a, "from the first lease")
	}
	select {
	case <-g.held:
	case <-time.After(5 * time.Second):
		t.Fatal("no refill went out at the low mark")
	}
	for i := 0; i < 4; i++ {
		admitOK(t, a, "from the tokens left while the refill is out")
	}
	close(g.gate)
	for i := 0; i < 10; i++ {
		admitOK(t, a, "from the refill's grant")
	}
	if n := g.askings.Load(); n != 2 {
		t.Fatalf("%d lease calls asked for tokens, want 2 (the first and one refill)", n)
	}
	eventually(t, "outcomes delivered, unused tokens back", func() bool {
		st, live := w.target("t")
		return a.Pending() == 0 && st.Admitted == 26 && live.InFlight == 0
	})
}

// A failure while a refill is out ends local admission: the refill's grant
// is given back rather than used, and the next request takes the lease path
// (which delivers the failure first).
func TestAdmitterRefillAfterAFailureIsGivenBack(t *testing.T) {
	w, g, a := newGated(t, relay.Policy{WindowMax: 1000, MaxInFlight: 1000, WindowMs: 600_000, BreakerFailures: 100, BackoffBaseMs: 1, BackoffMaxMs: 1}, 16)
	for i := 0; i < 12; i++ {
		admitOK(t, a, "from the first lease")
	}
	<-g.held
	d, err := a.Admit(context.Background(), "t")
	if err != nil || !d.Allowed {
		t.Fatalf("admit: %+v %v", d, err)
	}
	a.Report(relay.Outcome{Target: "t", Status: 503})
	close(g.gate)
	eventually(t, "the refill ended", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.leasing["t"] == nil
	})
	a.mu.Lock()
	p := a.pools["t"]
	a.mu.Unlock()
	if p != nil {
		t.Fatalf("tokens left after a failure: %+v", p.grants)
	}
	eventually(t, "the grant and the tokens left given back", func() bool {
		st, live := w.target("t")
		return a.Pending() == 0 && st.Admitted == 13 && live.InFlight == 0
	})
}
