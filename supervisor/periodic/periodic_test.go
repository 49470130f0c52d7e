package periodic

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A loop runs its function on the interval between Start and Stop only;
// Stop waits for the pass in progress and ends its context; a second Start
// is refused while it runs, and a stopped loop starts again.
func TestLoopRunsBetweenStartAndStop(t *testing.T) {
	var passes, inPass atomic.Int32
	release := make(chan struct{})
	l := New(10*time.Millisecond, func(ctx context.Context) {
		inPass.Store(1)
		defer inPass.Store(0)
		if passes.Add(1) == 3 {
			<-ctx.Done() // a pass in progress when Stop comes
		}
		select {
		case <-release:
		default:
		}
	})
	if l.Running() {
		t.Fatal("a new loop runs")
	}
	if !l.Start() || l.Start() {
		t.Fatal("Start: want true, then false while running")
	}
	deadline := time.Now().Add(10 * time.Second)
	for passes.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d passes in 10 s", passes.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	l.Stop()
	if inPass.Load() != 0 || l.Running() {
		t.Fatal("Stop returned with a pass in progress, or the loop still running")
	}
	after := passes.Load()
	time.Sleep(50 * time.Millisecond)
	if passes.Load() != after {
		t.Fatalf("passes went on after Stop: %d → %d", after, passes.Load())
	}
	l.Stop() // stopping a stopped loop does nothing
	if !l.Start() {
		t.Fatal("a stopped loop did not start again")
	}
	l.Stop()
	close(release)
}
