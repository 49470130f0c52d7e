package relayadmit

import "time"

// pool is one target's local tokens: the grants of its leases, oldest
// first. A refill (see refill.go) adds a grant while the previous one is
// still being used, so each grant keeps its own expiry: no token is used
// later than LeaseTTL after the worker granted it.
type pool struct {
	grants []grant
}

type grant struct {
	tokens  int
	expires time.Time
}

// take uses one live token, oldest grant first; expired grants are dropped
// and their tokens returned (the count the caller must give back).
func (p *pool) take(now time.Time) (ok bool, expired int) {
	for len(p.grants) > 0 {
		g := &p.grants[0]
		if !now.Before(g.expires) || g.tokens <= 0 {
			expired += max(g.tokens, 0)
			p.grants = p.grants[1:]
			continue
		}
		g.tokens--
		if g.tokens == 0 {
			p.grants = p.grants[1:]
		}
		return true, expired
	}
	return false, expired
}

// expire drops the grants that ran out and returns their unused tokens.
func (p *pool) expire(now time.Time) (expired int) {
	live := p.grants[:0]
	for _, g := range p.grants {
		if now.Before(g.expires) {
			live = append(live, g)
		} else {
			expired += g.tokens
		}
	}
	p.grants = live
	return expired
}

// hasExpired reports whether some grant ran out (its tokens are due back).
func (p *pool) hasExpired(now time.Time) bool {
	for _, g := range p.grants {
		if !now.Before(g.expires) {
			return true
		}
	}
	return false
}

// tokens is how many tokens are left, expired or not.
func (p *pool) tokens() (n int) {
	for _, g := range p.grants {
		n += g.tokens
	}
	return n
}
