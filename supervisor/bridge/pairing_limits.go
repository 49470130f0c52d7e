package bridge

import (
	"sync"
	"time"
)

// Pairing guess limits (issue 34 §1, §2). Only a pairing code is a secret
// small enough to guess (40 bits); a bridge credential (256 bits) and the
// shared token are not, so the limits bound code guesses and nothing an
// owner sends: a credential hello is never refused because someone else
// failed, and a token hello only because of wrong tokens from its own
// address. Code guesses are bounded three ways, each a sliding window:
//   - per source address (a careless client; cheap to evade by rotating
//     through 127.0.0.0/8, so not the bound that matters),
//   - per client id (the id is the guesser's choice, so the same),
//   - globally, over every source and id: this is the bound the
//     arithmetic in docs/security.md rests on.
// An attempt takes its slot before the code is looked at and gives it back
// only when the code was right, so concurrent guesses cannot overshoot a
// bound between the check and the count.

// DefaultCodeGuessesGlobal is how many failed code hellos all sources
// together may make per pairingFailWindow (a minute) before every further
// code hello is refused unread with pairing_rate_limited.
const DefaultCodeGuessesGlobal = 60

// maxLimitKeys bounds the per-source and per-client maps under a spray of
// addresses or ids. Past it the oldest keys' history is dropped: that
// forgives only per-key counts, never the global one.
const maxLimitKeys = 4096

// slidingCounts holds, per key, the times of recent attempts within window.
type slidingCounts struct {
	window time.Duration
	times  map[string][]time.Time
}

func newSlidingCounts(window time.Duration) *slidingCounts {
	return &slidingCounts{window: window, times: map[string][]time.Time{}}
}

// recent drops key's attempts older than the window and returns the rest.
func (s *slidingCounts) recent(key string, now time.Time) []time.Time {
	old := s.times[key]
	kept := old[:0]
	for _, t := range old {
		if now.Sub(t) < s.window {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		delete(s.times, key)
		return nil
	}
	s.times[key] = kept
	return kept
}

func (s *slidingCounts) count(key string, now time.Time) int { return len(s.recent(key, now)) }

func (s *slidingCounts) add(key string, now time.Time) {
	if _, ok := s.times[key]; !ok && len(s.times) >= maxLimitKeys {
		s.prune(now)
	}
	s.times[key] = append(s.recent(key, now), now)
}

// prune drops expired keys; if the map is still full, it drops all but the
// global key's history (the only one the bound depends on).
func (s *slidingCounts) prune(now time.Time) {
	for k := range s.times {
		s.recent(k, now)
	}
	if len(s.times) < maxLimitKeys {
		return
	}
	for k := range s.times {
		if k != globalKey {
			delete(s.times, k)
		}
	}
}

// remove takes back one attempt made at t under key.
func (s *slidingCounts) remove(key string, t time.Time) {
	ts := s.times[key]
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].Equal(t) {
			s.times[key] = append(ts[:i], ts[i+1:]...)
			return
		}
	}
}

const (
	globalKey = "*"
	sourceKey = "source:"
	clientKey = "client:"
	tokenKey  = "token:"
)

// guessLimits is the limiter; its zero value is not usable (newGuessLimits).
type guessLimits struct {
	perSource int // failed code hellos per source address and window
	perClient int // failed code hellos per client id and window
	global    int // failed code hellos from everyone per window
	perToken  int // wrong tokens per source address and window

	mu     sync.Mutex
	counts *slidingCounts
}

func newGuessLimits(perKey, global int, window time.Duration) *guessLimits {
	return &guessLimits{perSource: perKey, perClient: perKey, global: global, perToken: perKey, counts: newSlidingCounts(window)}
}

// codeTicket is a reserved code attempt; forgive gives it back.
type codeTicket struct {
	at         time.Time
	ip, client string
}

// reserveCode takes a slot for one code attempt from ip for clientID, or
// says which bound is exhausted ("" when ok).
func (g *guessLimits) reserveCode(ip, clientID string, now time.Time) (codeTicket, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.counts.count(globalKey, now) >= g.global:
		return codeTicket{}, "global"
	case g.counts.count(sourceKey+ip, now) >= g.perSource:
		return codeTicket{}, "source"
	case g.counts.count(clientKey+clientID, now) >= g.perClient:
		return codeTicket{}, "client"
	}
	for _, k := range []string{globalKey, sourceKey + ip, clientKey + clientID} {
		g.counts.add(k, now)
	}
	return codeTicket{at: now, ip: ip, client: clientID}, ""
}

// forgive returns a right code's slot: only failed guesses count.
func (g *guessLimits) forgive(t codeTicket) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range []string{globalKey, sourceKey + t.ip, clientKey + t.client} {
		g.counts.remove(k, t.at)
	}
}

// tokenAllowed reports whether ip may try the shared token now.
func (g *guessLimits) tokenAllowed(ip string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.counts.count(tokenKey+ip, now) < g.perToken
}

// tokenFailed counts a wrong token from ip.
func (g *guessLimits) tokenFailed(ip string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.counts.add(tokenKey+ip, now)
}
