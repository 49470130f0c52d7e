package relayadmit

import (
	"context"
	"time"
)

// Refilling ahead (issue 15): when a target's local tokens run low, one
// lease call goes out in the background while the remaining tokens keep
// admitting, so under steady load callers no longer stop together, every
// Want requests, to wait for a Lease round trip. A refill is an ordinary
// lease: it carries the queued outcomes and returned tokens first, it is the
// target's one lease in flight (callers that do run out wait for it, as for
// any lease), and what it grants is a separate grant with its own expiry.

// lowLocked reports whether target's tokens are at or below the refill
// mark and no lease for it is in flight; call with mu held.
func (a *Admitter) lowLocked(target string) bool {
	p := a.pools[target]
	return p != nil && p.tokens() <= a.opts.Want/4 && a.leasing[target] == nil
}

// startRefillLocked marks a lease in flight for target and starts it; call
// with mu held.
func (a *Admitter) startRefillLocked(target string) {
	done := make(chan struct{})
	a.leasing[target] = done
	gen := a.gen[target]
	go a.refill(target, gen, done)
}

func (a *Admitter) refill(target string, gen uint64, done chan struct{}) {
	// The managed relay bounds the call; nobody waits on its context.
	granted, err := a.deliver(context.Background(), map[string]int{target: a.opts.Want})
	k := granted.Granted[target]
	a.tokens.granted.Add(uint64(max(k, 0)))
	a.mu.Lock()
	defer a.mu.Unlock()
	defer close(done)
	delete(a.leasing, target)
	if err != nil || k <= 0 {
		return
	}
	if a.gen[target] != gen {
		// A failure (or a revocation) ended local admission while the call
		// was out: the next request must take the lease path, which
		// delivers it first. The grant goes back unused.
		a.returned[target] += k
		a.poke()
		return
	}
	p := a.pools[target]
	if p == nil {
		p = &pool{}
		a.pools[target] = p
	}
	p.grants = append(p.grants, grant{tokens: k, expires: time.Now().Add(granted.TTL)})
}
