package relay

import (
	"context"
	"sync"
	"time"

	"github.com/svcd/svcd/shared/keyrange"
)

// Engine is the in-process implementation of Relay.
type Engine struct {
	policy Policy
	now    func() time.Time

	mu      sync.Mutex
	targets map[string]*target
	// keys is targets' keys in order: Status of a range of keys (one
	// GET /v1/browser page) walks that range, not every target.
	keys  keyrange.Keys
	dirty map[string]bool
}

// target is one target's state plus its in-process counters.
type target struct {
	TargetState
	inFlight int
	waiting  int
	probing  bool // a half-open probe is in flight
	// grantWindowMs is the window the last lease was granted in; tokens
	// given back only free window places in that same window.
	grantWindowMs int64
	slot          chan struct{} // closed and replaced when a slot frees up
}

// NewEngine builds an engine with policy (defaults filled in).
func NewEngine(p Policy) *Engine {
	return &Engine{policy: p.WithDefaults(), now: time.Now, targets: map[string]*target{}, dirty: map[string]bool{}}
}

// SetClock replaces the clock (tests).
func (e *Engine) SetClock(now func() time.Time) { e.now = now }

// Policy is the effective policy.
func (e *Engine) Policy() Policy { return e.policy }

func (e *Engine) get(name string) *target {
	t := e.targets[name]
	if t == nil {
		t = &target{TargetState: TargetState{Target: name, Breaker: BreakerClosed}, slot: make(chan struct{})}
		e.targets[name] = t
		e.keys.Add(name)
	}
	return t
}

// Admit implements Relay.
func (e *Engine) Admit(ctx context.Context, name string) (Decision, error) {
	deadline := e.now().Add(ms(e.policy.MaxWaitMs))
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.get(name)
	before := t.Breaker
	for {
		now := e.now()
		if d, refused := e.gate(t, now); refused {
			t.Refused++
			e.dirty[name] = true
			return d, nil
		}
		if t.inFlight < e.policy.MaxInFlight {
			break
		}
		// Wait for a slot, bounded by MaxWaitMs and the caller.
		wait := deadline.Sub(now)
		if wait <= 0 {
			t.Refused++
			e.dirty[name] = true
			return Decision{Reason: "busy", RetryAfterMs: max(1, e.policy.MaxWaitMs/2)}, nil
		}
		slot := t.slot
		t.waiting++
		e.mu.Unlock()
		timer := time.NewTimer(wait)
		select {
		case <-slot:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
		e.mu.Lock()
		t.waiting--
		if ctx.Err() != nil {
			return Decision{Reason: "cancelled"}, ctx.Err()
		}
	}
	changed := t.Breaker != before
	probe := t.Breaker == BreakerHalfOpen
	if probe {
		t.probing = true
	}
	now := e.now()
	if now.UnixMilli() >= t.WindowStartMs+e.policy.WindowMs {
		t.WindowStartMs, t.WindowCount = now.UnixMilli(), 0
	}
	t.WindowCount++
	t.inFlight++
	t.Admitted++
	e.dirty[name] = true
	return Decision{Allowed: true, Changed: changed, Probe: probe}, nil
}

// gate applies breaker, backoff and window, in that order. It may move an
// open breaker to half-open when its open time has passed.
func (e *Engine) gate(t *target, now time.Time) (Decision, bool) {
	nowMs := now.UnixMilli()
	switch t.Breaker {
	case BreakerOpen:
		until := t.BreakerOpenedMs + e.policy.BreakerOpenMs
		if nowMs < until {
			return Decision{Reason: "circuit_open", RetryAfterMs: until - nowMs}, true
		}
		t.Breaker = BreakerHalfOpen
	case BreakerHalfOpen:
		if t.probing {
			return Decision{Reason: "circuit_half_open", RetryAfterMs: e.policy.BackoffBaseMs}, true
		}
	}
	if nowMs < t.BackoffUntilMs {
		return Decision{Reason: "backoff", RetryAfterMs: t.BackoffUntilMs - nowMs}, true
	}
	if nowMs < t.WindowStartMs+e.policy.WindowMs && t.WindowCount >= e.policy.WindowMax {
		return Decision{Reason: "rate_limited", RetryAfterMs: t.WindowStartMs + e.policy.WindowMs - nowMs}, true
	}
	return Decision{}, false
}

// failure reports whether status counts against the target.
func failure(o Outcome) bool {
	if o.Cancelled {
		return false
	}
	return o.Status == 0 || o.Status == 429 || o.Status >= 500
}

// Report implements Relay.
func (e *Engine) Report(ctx context.Context, o Outcome) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.report(o), nil
}

// report applies one outcome; call with mu held.
func (e *Engine) report(o Outcome) bool {
	t := e.get(o.Target)
	if t.inFlight > 0 {
		t.inFlight--
		close(t.slot)
		t.slot = make(chan struct{})
	}
	if o.Probe {
		t.probing = false
	}
	if o.Cancelled {
		return false
	}
	now := e.now()
	t.LastStatus, t.LastOutcomeMs = o.Status, now.UnixMilli()
	e.dirty[o.Target] = true
	if t.Breaker == BreakerHalfOpen && !o.Probe {
		// A late answer to a request admitted before the breaker opened: only
		// the probe may decide whether the target has recovered.
		return false
	}
	if !failure(o) {
		changed := t.BackoffLevel != 0 || t.BreakerFailures != 0 || t.Breaker != BreakerClosed
		t.BackoffLevel, t.BackoffUntilMs, t.BreakerFailures, t.Breaker = 0, 0, 0, BreakerClosed
		return changed
	}
	t.BackoffLevel++
	wait := e.policy.BackoffBaseMs << min(t.BackoffLevel-1, 20)
	if wait > e.policy.BackoffMaxMs || wait <= 0 {
		wait = e.policy.BackoffMaxMs
	}
	// The platform's own Retry-After wins: it knows its limits better than
	// our exponential guess does.
	if o.RetryAfterMs > 0 {
		wait = min(o.RetryAfterMs, 24*3600*1000)
	}
	t.BackoffUntilMs = now.UnixMilli() + wait
	t.BreakerFailures++
	if t.Breaker == BreakerHalfOpen || (t.Breaker == BreakerClosed && t.BreakerFailures >= e.policy.BreakerFailures) {
		t.Breaker, t.BreakerOpenedMs = BreakerOpen, now.UnixMilli()
	}
	return true
}

// Status implements Relay.
func (e *Engine) Status(ctx context.Context, keys keyrange.Range) (Status, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	live := map[string]Live{}
	targets := map[string]TargetState{}
	e.keys.Walk(keys, func(name string) bool {
		t := e.targets[name]
		if t.inFlight > 0 || t.waiting > 0 {
			live[name] = Live{InFlight: t.inFlight, Waiting: t.waiting}
		}
		targets[name] = t.TargetState
		return true
	})
	return Status{Policy: e.policy, Live: live, Targets: targets}, nil
}

// TakeDirty implements Relay.
func (e *Engine) TakeDirty(ctx context.Context) ([]TargetState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]TargetState, 0, len(e.dirty))
	for name := range e.dirty {
		if t := e.targets[name]; t != nil {
			out = append(out, t.TargetState)
		}
	}
	e.dirty = map[string]bool{}
	return out, nil
}

// Restore implements Relay. In-process counters start at zero.
func (e *Engine) Restore(ctx context.Context, states []TargetState) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range states {
		if s.Target == "" {
			continue
		}
		if s.Breaker == "" {
			s.Breaker = BreakerClosed
		}
		t := e.get(s.Target)
		t.TargetState = s
	}
	return nil
}

var _ Relay = (*Engine)(nil)
