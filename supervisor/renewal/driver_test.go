package renewal

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/supervisor/periodic"
	"github.com/svcd/svcd/workers/scheduler"
)

// A delivery runs to the end on its own context: a worker that gives up (or
// dies) after asking for it neither loses the message nor leaves the job
// running.
func TestDeliverOutlivesTheCallersContext(t *testing.T) {
	r := newRig(t, scheduler.Settings{MaxFailures: 3})
	autoConv(t, r.store, "c1")
	j, _ := r.createJob(t, "c1")
	r.startJob(t, j.ID)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := r.driver.Deliver(gone, j.ID)
	if err != nil || !d.OK {
		t.Fatalf("delivery under a canceled caller: %+v %v", d, err)
	}
	if got := r.job(t, j.ID); got.Status != raftstore.JobDone {
		t.Fatalf("job: %+v", got)
	}
}

// Start ticks every interval until Stop, which waits for the tick in
// progress; Start is idempotent and Status tells whether it runs.
func TestDriverTicksBetweenStartAndStop(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	autoConv(t, r.store, "c1")
	var ticks, changed atomic.Int64
	r.store.Changed = func() { changed.Add(1) }
	tickEvery(r.driver, 5*time.Millisecond)
	r.driver.tick = func(ctx context.Context, h scheduler.Host, now time.Time, s scheduler.Settings) (scheduler.Result, error) {
		ticks.Add(1)
		return scheduler.Engine{}.Tick(ctx, h, now, s)
	}
	if running, _, _ := r.driver.Status(); running {
		t.Fatal("running before Start")
	}
	r.driver.Start()
	r.driver.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if jobs := r.store.Jobs("c1", 1); len(jobs) == 1 && jobs[0].Status == raftstore.JobDone && ticks.Load() >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no delivered job after %d ticks", ticks.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if running, _, lastErr := r.driver.Status(); !running || lastErr != "" {
		t.Fatalf("status while started: %v %q", running, lastErr)
	}
	r.driver.Stop()
	after := ticks.Load()
	if running, _, _ := r.driver.Status(); running {
		t.Fatal("running after Stop")
	}
	if changed.Load() == 0 {
		t.Fatal("no change was announced for the delivered job")
	}
	time.Sleep(4 * r.driver.every)
	if n := ticks.Load(); n != after {
		t.Fatalf("%d ticks after Stop returned", n-after)
	}
	r.driver.Stop() // idempotent
}

// Stop cancels a tick in progress and waits for it to end.
func TestDriverStopWaitsForTheTick(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	in, ended := make(chan struct{}), atomic.Bool{}
	tickEvery(r.driver, time.Millisecond)
	var once atomic.Bool
	r.driver.tick = func(ctx context.Context, _ scheduler.Host, _ time.Time, _ scheduler.Settings) (scheduler.Result, error) {
		if once.CompareAndSwap(false, true) {
			close(in)
		}
		<-ctx.Done()
		ended.Store(true)
		return scheduler.Result{}, ctx.Err()
	}
	r.driver.Start()
	select {
	case <-in:
	case <-time.After(10 * time.Second):
		t.Fatal("no tick began")
	}
	r.driver.Stop()
	if !ended.Load() {
		t.Fatal("Stop returned before the tick in progress ended")
	}
}

// tickEvery makes d (stopped) tick every interval instead of its configured one.
func tickEvery(d *Driver, every time.Duration) {
	d.every = every
	d.loop = periodic.New(every, d.once)
}
