package relay

import (
	"context"
	"time"
)

// Flusher persists the engine's dirty targets on the supervisor side: at
// once after a state transition (Kick), otherwise every interval. Window
// counters change on every request; a raft commit per request would cost
// more than the relay itself.
type Flusher struct {
	relay    Relay
	save     func(ctx context.Context, states []TargetState) error
	interval time.Duration
	kick     chan struct{}
	onError  func(error)
}

// NewFlusher builds a flusher; save writes through raft.
func NewFlusher(r Relay, interval time.Duration, save func(context.Context, []TargetState) error, onError func(error)) *Flusher {
	return &Flusher{relay: r, save: save, interval: interval, kick: make(chan struct{}, 1), onError: onError}
}

// Kick asks for a flush soon without waiting for it.
func (f *Flusher) Kick() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// Run flushes until ctx ends, then once more.
func (f *Flusher) Run(ctx context.Context) {
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			f.Flush(fctx)
			cancel()
			return
		case <-t.C:
		case <-f.kick:
		}
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		f.Flush(fctx)
		cancel()
	}
}

// Flush persists what is dirty now.
func (f *Flusher) Flush(ctx context.Context) {
	states, err := f.relay.TakeDirty(ctx)
	if err == nil && len(states) > 0 {
		err = f.save(ctx, states)
	}
	if err != nil && f.onError != nil {
		f.onError(err)
	}
}
