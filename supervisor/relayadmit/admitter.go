// Package relayadmit admits browser requests locally from leases the relay
// worker grants in bulk, and hands outcomes back in batches after the caller
// has its answer, so the relay worker (crash-isolated, the policy's owner)
// is not on the per-request path. See workers/relay/lease.go for what a
// token counts as; refusals, waits and probes still go through Admit.
package relayadmit

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/workers/relay"
)

// Backend is the relay engine as the admitter needs it.
type Backend interface {
	relay.Relay
	relay.Leaser
}

// Options tune an Admitter.
type Options struct {
	Want      int           // tokens asked for per lease (default 32)
	Retry     time.Duration // delay before re-sending a batch that failed (default 50 ms)
	Coalesce  time.Duration // how long a batch holding a failure gathers before it goes (default 1 ms)
	Gather    time.Duration // how long a batch of successes only gathers (default 5 ms)
	OnChanged func()        // persisted relay state changed (kick the flusher)
	Logger    hclog.Logger
}

// Admitter is safe for concurrent use. Run its loop with Run.
type Admitter struct {
	be   Backend
	opts Options

	mu       sync.Mutex
	pools    map[string]*pool
	pending  []relay.Outcome          // outcomes not yet delivered to the engine
	sending  int                      // outcomes in a Lease call not yet answered (put back into pending if it fails)
	returned map[string]int           // unused tokens not yet given back
	leasing  map[string]chan struct{} // a lease call in flight per target; closed when it ends
	gen      map[string]uint64        // bumped when a target's local admission ends (failure, revocation)
	failed   bool                     // a failure is among pending: the batch goes after Coalesce
	// Lease calls carrying outcomes that are out, those of them with a
	// failure, and a channel closed (and replaced) whenever one ends.
	outCalls, outFailing int
	outEnded             chan struct{}
	kick                 chan struct{}
	urgent               chan struct{} // a failure was queued while a batch gathers
	tokens               tokenCounts   // metrics.go
}

// New builds an admitter over be.
func New(be Backend, o Options) *Admitter {
	if o.Want <= 0 {
		o.Want = 32
	}
	if o.Retry <= 0 {
		o.Retry = 50 * time.Millisecond
	}
	if o.Coalesce <= 0 {
		o.Coalesce = time.Millisecond
	}
	if o.Gather <= 0 {
		// Successes change no decision, and a request that finds no token
		// asks for a lease, which carries everything queued first; so they
		// can wait longer than failures (issue 15: at a few thousand
		// requests a second 1 ms meant a Lease call, and its work in both
		// processes, every few requests).
		o.Gather = 5 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.OnChanged == nil {
		o.OnChanged = func() {}
	}
	return &Admitter{be: be, opts: o, pools: map[string]*pool{}, returned: map[string]int{}, leasing: map[string]chan struct{}{},
		gen: map[string]uint64{}, kick: make(chan struct{}, 1), urgent: make(chan struct{}, 1), outEnded: make(chan struct{})}
}

// Admit decides one request to target: from a local token when there is
// one, else from a fresh lease (which first delivers the pending outcomes,
// so the engine decides on everything that has happened), else through the
// engine's Admit, one request at a time. When the worker cannot be reached
// and no token is left, the answer is the error: the relay fails closed.
func (a *Admitter) Admit(ctx context.Context, target string) (relay.Decision, error) {
	a.mu.Lock()
	for {
		if a.takeLocked(target) {
			a.tokens.used.Add(1)
			if a.lowLocked(target) {
				a.startRefillLocked(target)
			}
			a.mu.Unlock()
			return relay.Decision{Allowed: true}, nil
		}
		// One lease per target at a time: callers that miss together wait
		// for it and share its tokens. Each taking its own would let the
		// first grant hold the whole window while the others are refused.
		wait := a.leasing[target]
		if wait == nil {
			break
		}
		a.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return relay.Decision{Reason: "cancelled"}, ctx.Err()
		}
		a.mu.Lock()
	}
	done := make(chan struct{})
	a.leasing[target] = done
	gen := a.gen[target]
	a.mu.Unlock()

	// Not the caller's context: a caller that goes away after the worker
	// applied the batch must not make it look failed and be sent twice
	// (the managed relay bounds the call itself).
	granted, err := a.deliver(context.WithoutCancel(ctx), map[string]int{target: a.opts.Want})
	k := granted.Granted[target]
	a.tokens.granted.Add(uint64(max(k, 0)))
	a.mu.Lock()
	switch {
	case err != nil || k <= 1:
	case a.gen[target] != gen:
		// A failure ended local admission while the call was out: this
		// caller was admitted, the rest of the grant goes back (as a
		// refill's does).
		a.returned[target] += k - 1
		a.poke()
	default:
		a.dropLocked(target) // an expired pool's tokens go back, never lost
		a.pools[target] = &pool{grants: []grant{{tokens: k - 1, expires: time.Now().Add(granted.TTL)}}}
	}
	delete(a.leasing, target)
	close(done)
	a.mu.Unlock()
	switch {
	case err != nil:
		return relay.Decision{}, err
	case k > 0:
		a.tokens.used.Add(1)
		return relay.Decision{Allowed: true}, nil
	}
	return a.be.Admit(ctx, target)
}

// takeLocked uses one of target's tokens if a live one is left; expired
// grants are given back. Call with mu held.
func (a *Admitter) takeLocked(target string) bool {
	p := a.pools[target]
	if p == nil {
		return false
	}
	ok, expired := p.take(time.Now())
	if expired > 0 {
		a.returned[target] += expired
	}
	if !ok {
		delete(a.pools, target)
	}
	return ok
}

// Report queues the outcome of an admitted request for the next batch. A
// failure ends local admission for its target at once: the next request
// takes the lease path, which delivers this outcome before deciding.
func (a *Admitter) Report(o relay.Outcome) {
	a.mu.Lock()
	a.pending = append(a.pending, o)
	failure := relay.IsFailure(o)
	if failure {
		a.dropLocked(o.Target)
		a.gen[o.Target]++
		a.failed = true
	}
	a.mu.Unlock()
	if failure {
		select {
		case a.urgent <- struct{}{}:
		default:
		}
	}
	a.poke()
}

// dropLocked gives target's unused tokens back; call with mu held.
func (a *Admitter) dropLocked(target string) {
	if p := a.pools[target]; p != nil {
		if n := p.tokens(); n > 0 {
			a.returned[target] += n
		}
		delete(a.pools, target)
	}
}

// deliver sends the pending outcomes and returned tokens with want in one
// Lease call. On failure they are put back to be sent again.
func (a *Admitter) deliver(ctx context.Context, want map[string]int) (relay.LeaseReply, error) {
	a.mu.Lock()
	// Outcomes reach the engine in the order they were taken where the
	// order decides: a failure on its way (Run's batch) goes before any
	// other call, or a lease sent beside it could be decided first and
	// admit a request past the failure that trips the breaker; and a batch
	// with a failure goes after the outcomes already out, or a success
	// arriving late would reset the breaker the failure opened. Batches of
	// successes alone are not ordered among themselves.
	for a.outFailing > 0 || (a.failed && a.outCalls > 0) {
		ended := a.outEnded
		a.mu.Unlock()
		<-ended
		a.mu.Lock()
	}
	now := time.Now()
	for name, p := range a.pools {
		if n := p.expire(now); n > 0 {
			a.returned[name] += n
		}
		if len(p.grants) == 0 {
			delete(a.pools, name)
		}
	}
	req := relay.LeaseRequest{Outcomes: a.pending, Returned: a.returned, Want: want}
	failed := a.failed
	a.pending, a.returned, a.failed = nil, map[string]int{}, false
	a.sending += len(req.Outcomes)
	carries := len(req.Outcomes) > 0
	if carries {
		a.outCalls++
		if failed {
			a.outFailing++
		}
	}
	a.mu.Unlock()
	reply, err := a.be.Lease(ctx, req)
	a.mu.Lock()
	a.sending -= len(req.Outcomes)
	if carries {
		a.outCalls--
		if failed {
			a.outFailing--
		}
		close(a.outEnded)
		a.outEnded = make(chan struct{})
	}
	if err != nil {
		a.pending = append(req.Outcomes, a.pending...)
		a.failed = a.failed || failed
		for k, v := range req.Returned {
			a.returned[k] += v
		}
		a.mu.Unlock()
		return reply, err
	}
	for _, name := range reply.Revoked {
		a.dropLocked(name)
		a.gen[name]++
	}
	a.mu.Unlock()
	if reply.Changed {
		a.opts.OnChanged()
	}
	return reply, nil
}

// Pending is how many outcomes the engine has not acknowledged yet (status,
// tests): the queued ones and those of a Lease call still out. Counting only
// the queue would read 0 while a batch is on its way to a worker that is
// down, although every one of them is kept and sent again.
func (a *Admitter) Pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending) + a.sending
}

// Run delivers batches until ctx ends: whenever outcomes are queued, and
// every LeaseTTL to give back expired tokens. A batch that fails (the worker
// is down or restarting) is kept and sent again, so outcomes survive a
// worker crash and reach the restarted engine. On ctx's end one last batch
// is attempted briefly.
func (a *Admitter) Run(ctx context.Context) {
	tick := time.NewTicker(relay.LeaseTTL)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), time.Second)
			a.flush(fctx)
			cancel()
			return
		case <-a.kick:
			a.gather(ctx)
		case <-tick.C:
		}
		if err := a.flush(ctx); err != nil && ctx.Err() == nil {
			a.opts.Logger.Debug("relay outcomes not delivered yet; retrying", "error", err, "pending", a.Pending())
			select {
			case <-ctx.Done():
			case <-time.After(a.opts.Retry):
				a.poke()
			}
		}
	}
}

// gather lets outcomes that finish together travel together: one Lease
// call per batch, not per request, under load. A batch of successes waits
// Gather; a failure (queued before or during the wait) cuts it to Coalesce,
// so the engine's backoff and breaker hear of it about as soon as before.
func (a *Admitter) gather(ctx context.Context) {
	a.mu.Lock()
	wait := a.opts.Gather
	if a.failed {
		wait = a.opts.Coalesce
	}
	a.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-a.urgent:
		if wait > a.opts.Coalesce {
			t.Reset(a.opts.Coalesce)
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
	}
}

func (a *Admitter) poke() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// flush delivers what is queued, if anything.
func (a *Admitter) flush(ctx context.Context) error {
	a.mu.Lock()
	idle := len(a.pending) == 0 && len(a.returned) == 0
	now := time.Now()
	for _, p := range a.pools {
		if p.hasExpired(now) {
			idle = false
		}
	}
	a.mu.Unlock()
	if idle {
		return nil
	}
	_, err := a.deliver(ctx, nil)
	return err
}
