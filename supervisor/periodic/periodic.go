// Package periodic runs one function on an interval between Start and
// Stop. The supervisor's leader-only work (the renewal scheduler's tick,
// the task reaper) starts when the node gains the lead and stops, waiting
// for the pass in progress, when it loses it or shuts down.
package periodic

import (
	"context"
	"sync"
	"time"
)

// Loop calls fn every interval while it runs. The context fn gets ends at
// Stop.
type Loop struct {
	every time.Duration
	fn    func(ctx context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a stopped loop.
func New(every time.Duration, fn func(ctx context.Context)) *Loop {
	return &Loop{every: every, fn: fn}
}

// Start begins the passes, the first one interval from now. It reports
// false when the loop was already running (Start is idempotent).
func (l *Loop) Start() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go l.run(ctx, l.done)
	return true
}

func (l *Loop) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.fn(ctx)
	}
}

// Stop ends the passes and waits for the one in progress. Stopping a
// stopped loop does nothing.
func (l *Loop) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel, l.done = nil, nil
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Running says whether the loop is between Start and Stop.
func (l *Loop) Running() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cancel != nil
}
