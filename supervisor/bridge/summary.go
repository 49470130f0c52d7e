package bridge

import (
	"maps"
	"sync"
	"time"

	"github.com/svcd/svcd/raftstore"
)

// The read model's summary counts every record's status on every page
// (SPEC'd: it is whole on every page), and walking all records (up to
// 2,048) per GET /v1/browser was most of a page's cost (issue 24 S2, third
// pass). A record's status is a function of the FSM state (the record and
// its client), the live connections and when they last spoke, the
// record's unflushed touch, and the time; with the first two unchanged,
// time alone only moves a record on at a known instant (statusUntil). So
// the counts of the untouched statuses are kept with the state version
// and the live map they were taken at, and reused up to the earliest
// instant one of them would change. The few records with an unflushed
// touch are then recounted one by one.

// statusCounts is the summary's record counts as of version and live,
// holding from at up to until (no expiry when !expires).
type statusCounts struct {
	version   uint64
	live      map[string]time.Time
	at, until time.Time
	expires   bool
	counts    Summary // Fresh, Stale and Lost
}

// summaryCache holds the last statusCounts (it is never changed once
// built, so readers share it).
type summaryCache struct {
	mu  sync.Mutex
	cur *statusCounts
}

// holds says whether c is still the count of the records at now for the
// state at version with these live connections.
func (c *statusCounts) holds(version uint64, live map[string]time.Time, now time.Time) bool {
	return c != nil && c.version == version && !now.Before(c.at) && (!c.expires || !now.After(c.until)) &&
		maps.Equal(c.live, live)
}

// countRecords adds the status of every persisted record of s to sum, as
// of now. Call inside Read, with version the state's version there (it
// cannot move while Read holds the state).
func (h *Hub) countRecords(s *raftstore.State, version uint64, now time.Time, live map[string]time.Time, touches map[string]raftstore.Touch, sum *Summary) {
	h.summary.mu.Lock()
	c := h.summary.cur
	h.summary.mu.Unlock()
	if !c.holds(version, live, now) {
		c = h.countAll(s, version, now, live)
		h.summary.mu.Lock()
		h.summary.cur = c
		h.summary.mu.Unlock()
	}
	sum.Fresh, sum.Stale, sum.Lost = sum.Fresh+c.counts.Fresh, sum.Stale+c.counts.Stale, sum.Lost+c.counts.Lost
	// An unflushed touch can only move its record from the count above
	// to another status: swap its untouched status for its touched one.
	for key, t := range touches {
		r := s.Browser.Records[key]
		if r == nil {
			continue
		}
		cl := s.Browser.Clients[r.ClientID]
		uncount(sum, h.statusTouched(now, r, cl, live, raftstore.Touch{}, false))
		countStatus(sum, h.statusTouched(now, r, cl, live, t, true))
	}
}

// countAll walks every record once.
func (h *Hub) countAll(s *raftstore.State, version uint64, now time.Time, live map[string]time.Time) *statusCounts {
	c := &statusCounts{version: version, live: maps.Clone(live), at: now}
	for _, r := range s.Browser.Records {
		st, until, expires := h.statusUntil(now, r, s.Browser.Clients[r.ClientID], live, raftstore.Touch{}, false)
		countStatus(&c.counts, st)
		if expires && (!c.expires || until.Before(c.until)) {
			c.until, c.expires = until, true
		}
	}
	return c
}

func uncount(s *Summary, st string) {
	switch st {
	case raftstore.StatusFresh:
		s.Fresh--
	case raftstore.StatusStale:
		s.Stale--
	case raftstore.StatusLost:
		s.Lost--
	}
}
