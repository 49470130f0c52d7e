package relayadmit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/svcd/svcd/workers/relay"
)

// stalledLeaser holds every lease call that delivers outcomes until release
// is closed, then fails it: a worker that went down with the batch on the
// wire.
type stalledLeaser struct {
	Backend
	held    chan struct{}
	release chan struct{}
}

func (s *stalledLeaser) Lease(ctx context.Context, r relay.LeaseRequest) (relay.LeaseReply, error) {
	if len(r.Outcomes) == 0 {
		return s.Backend.Lease(ctx, r)
	}
	select {
	case s.held <- struct{}{}:
	default:
	}
	<-s.release
	return relay.LeaseReply{}, errors.New("relay worker down")
}

// Outcomes on their way to the worker are still pending: the engine has not
// acknowledged them, and if the call fails they are sent again. Pending once
// read 0 while a batch was out (TestAdmitterOutcomesSurviveAWorkerCrash
// failed that way under load, 1 run in 12).
func TestAdmitterPendingCountsTheBatchInFlight(t *testing.T) {
	w := startWorker(t, "127.0.0.1:0", relay.Policy{MaxInFlight: 100})
	s := &stalledLeaser{Backend: w.client(), held: make(chan struct{}, 1), release: make(chan struct{})}
	a := New(s, Options{Retry: 10 * time.Millisecond})
	running(t, a)
	var once sync.Once
	free := func() { once.Do(func() { close(s.release) }) }
	t.Cleanup(free) // before running's cleanup: Run's last flush must not hang
	a.Report(relay.Outcome{Target: "t", Status: 200})
	a.Report(relay.Outcome{Target: "t", Status: 500})
	<-s.held
	if n := a.Pending(); n != 2 {
		t.Fatalf("with the batch on the wire Pending is %d, want 2", n)
	}
	free()
	<-s.held // the failed batch was put back and is being sent again
	if n := a.Pending(); n != 2 {
		t.Fatalf("after the failed call Pending is %d, want 2", n)
	}
}
