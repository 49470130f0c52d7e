package relay

import (
	"context"
	"time"
)

// Leases take the relay worker off the per-request path. Instead of one
// Admit and one Report round trip per browser request, the supervisor asks
// for admission tokens in bulk for a target whose breaker is closed and
// that is not backing off, admits locally while they last (at most LeaseTTL),
// and hands outcomes back in batches, asynchronously, after the caller has
// its answer. Every refusal, wait, half-open probe and backoff still goes
// through Admit, one request at a time, exactly as before.
//
// A granted token is counted at once as admitted: in the rate-limit window,
// in flight and in the Admitted counter. The request it admits ends with an
// ordinary Outcome; a token not used before its lease runs out is given back
// (Returned), which undoes the three counts (the window's only if it has not
// rolled over since the grant).

// LeaseTTL is how long granted tokens may be used. It bounds how long the
// supervisor keeps admitting after the worker died (then it fails closed:
// no lease, no Admit, 503) and how stale a local admission can be.
const LeaseTTL = 250 * time.Millisecond

// Leaser is implemented by the engine, its gRPC client and the supervisor's
// managed relay.
type Leaser interface {
	Lease(ctx context.Context, r LeaseRequest) (LeaseReply, error)
}

// LeaseRequest delivers outcomes and unused tokens, then asks for tokens.
type LeaseRequest struct {
	Outcomes []Outcome
	Returned map[string]int // unused tokens per target
	Want     map[string]int // tokens wanted per target
}

// LeaseReply says what was granted, whether persisted state changed, and
// which targets the batch made ungrantable (breaker tripped, backing off):
// the supervisor drops its tokens for those at once.
type LeaseReply struct {
	Granted map[string]int
	Changed bool
	Revoked []string
	TTL     time.Duration
}

// IsFailure reports whether an outcome counts against its target (the
// supervisor stops admitting locally on one, so that the next request goes
// through the engine after the failure is applied).
func IsFailure(o Outcome) bool { return failure(o) }

// Lease implements Leaser.
func (e *Engine) Lease(ctx context.Context, r LeaseRequest) (LeaseReply, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	reply := LeaseReply{Granted: map[string]int{}, TTL: LeaseTTL}
	touched := map[string]bool{}
	for _, o := range r.Outcomes {
		if e.report(o) {
			reply.Changed = true
		}
		touched[o.Target] = true
	}
	for name, k := range r.Returned {
		e.giveBack(e.get(name), k)
	}
	now := e.now()
	for name := range touched {
		if !e.grantable(e.targets[name], now) {
			reply.Revoked = append(reply.Revoked, name)
		}
	}
	for name, n := range r.Want {
		if k := e.grant(e.get(name), n, now); k > 0 {
			reply.Granted[name] = k
		}
	}
	return reply, nil
}

// grantable: tokens are only for a closed breaker that is not backing off.
func (e *Engine) grantable(t *target, now time.Time) bool {
	return t != nil && t.Breaker == BreakerClosed && now.UnixMilli() >= t.BackoffUntilMs
}

// grant admits up to n requests to t at once (see the package comment).
func (e *Engine) grant(t *target, n int, now time.Time) int {
	if n <= 0 || !e.grantable(t, now) {
		return 0
	}
	if now.UnixMilli() >= t.WindowStartMs+e.policy.WindowMs {
		t.WindowStartMs, t.WindowCount = now.UnixMilli(), 0
	}
	k := min(n, e.policy.WindowMax-t.WindowCount, e.policy.MaxInFlight-t.inFlight)
	if k <= 0 {
		return 0
	}
	t.WindowCount += k
	t.inFlight += k
	t.Admitted += int64(k)
	t.grantWindowMs = t.WindowStartMs
	e.dirty[t.Target] = true
	return k
}

// giveBack undoes the counts of k unused tokens.
func (e *Engine) giveBack(t *target, k int) {
	if k <= 0 {
		return
	}
	k = min(k, t.inFlight) // a restarted engine never granted them
	if k == 0 {
		return
	}
	t.inFlight -= k
	t.Admitted = max(0, t.Admitted-int64(k))
	if t.grantWindowMs == t.WindowStartMs {
		t.WindowCount = max(0, t.WindowCount-k)
	}
	close(t.slot)
	t.slot = make(chan struct{})
	e.dirty[t.Target] = true
}
