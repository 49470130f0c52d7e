package bridge

import (
	"context"
	"sync"
	"time"

	"github.com/svcd/svcd/raftstore"
)

// activity batches "last seen" marks in memory between flushes: keepalives
// arrive every 20 s per client and relay traffic per request, and none of
// that deserves its own raft commit.
type activity struct {
	mu      sync.Mutex
	clients map[string]raftstore.Touch
	records map[string]raftstore.Touch
}

func newActivity() *activity {
	return &activity{clients: map[string]raftstore.Touch{}, records: map[string]raftstore.Touch{}}
}

func (a *activity) touchClient(id string, at time.Time, kind string) {
	a.mu.Lock()
	a.clients[id] = raftstore.Touch{ClientID: id, At: at.UTC(), Kind: kind}
	a.mu.Unlock()
}

func (a *activity) touchRecord(key string, at time.Time, kind string) {
	a.mu.Lock()
	a.records[key] = raftstore.Touch{Key: key, At: at.UTC(), Kind: kind}
	a.mu.Unlock()
}

// recordTouch is the unflushed activity of key, if any.
func (a *activity) recordTouch(key string) (raftstore.Touch, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.records[key]
	return t, ok
}

func (a *activity) take() []raftstore.Touch {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]raftstore.Touch, 0, len(a.clients)+len(a.records))
	for _, t := range a.clients {
		out = append(out, t)
	}
	for _, t := range a.records {
		out = append(out, t)
	}
	a.clients, a.records = map[string]raftstore.Touch{}, map[string]raftstore.Touch{}
	return out
}

func (h *Hub) flushActivity(ctx context.Context) {
	touches := h.activity.take()
	if len(touches) == 0 {
		return
	}
	if _, err := h.host.Apply(ctx, raftstore.CmdBrowserActivity, raftstore.BrowserActivity{Touches: touches}); err != nil {
		h.log.Debug("activity flush failed", "error", err)
	}
}

func (h *Hub) sweep(ctx context.Context) {
	now := time.Now().UTC()
	live := h.liveSeen()
	var sweeps []raftstore.Sweep
	h.host.Read(func(s *raftstore.State) {
		for key, r := range s.Browser.Records {
			st := h.status(now, r, s.Browser.Clients[r.ClientID], live)
			if st != r.SweptStatus {
				sweeps = append(sweeps, raftstore.Sweep{Key: key, Status: st, At: now})
			}
		}
	})
	if len(sweeps) == 0 {
		return
	}
	if _, err := h.host.Apply(ctx, raftstore.CmdBrowserSweep, raftstore.BrowserSweep{Sweeps: sweeps}); err != nil {
		h.log.Debug("stale sweep not recorded", "error", err)
	}
}

// liveSeen maps each connected clientId to its last inbound frame time.
func (h *Hub) liveSeen() map[string]time.Time {
	out := map[string]time.Time{}
	for _, c := range h.liveConns() {
		out[c.clientID] = c.LastSeen()
	}
	return out
}

// status decides fresh, stale or lost. A connected client is fresh while it
// has sent anything within StaleAfter, stale after. A disconnected client's
// records are stale until LostAfter has passed since it was last seen, then
// lost.
func (h *Hub) status(now time.Time, r *raftstore.BrowserRecord, c *raftstore.BrowserClient, live map[string]time.Time) string {
	t, touched := h.activity.recordTouch(r.Key)
	return h.statusTouched(now, r, c, live, t, touched)
}

// recordTouches is a copy of every unflushed record touch: one lock for a
// walk over every record (the read model's summary) instead of one each.
func (a *activity) recordTouches() map[string]raftstore.Touch {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.records) == 0 {
		return nil
	}
	out := make(map[string]raftstore.Touch, len(a.records))
	for k, t := range a.records {
		out[k] = t
	}
	return out
}

// statusTouched is status with the record's unflushed touch given.
func (h *Hub) statusTouched(now time.Time, r *raftstore.BrowserRecord, c *raftstore.BrowserClient, live map[string]time.Time, t raftstore.Touch, touched bool) string {
	st, _, _ := h.statusUntil(now, r, c, live, t, touched)
	return st
}

// statusUntil is statusTouched with the last instant its answer holds
// while the inputs stay as they are: time alone only moves a record on
// (fresh → stale for a live client, stale → lost for another), so a
// fresh record stays fresh up to its last activity plus StaleAfter and
// a stale record of a disconnected client stays stale up to its last
// activity plus LostAfter. expires is false when time alone never
// changes the answer (stale while live, lost). The read model's summary
// keeps its counts up to the earliest until (summary.go).
func (h *Hub) statusUntil(now time.Time, r *raftstore.BrowserRecord, c *raftstore.BrowserClient, live map[string]time.Time, t raftstore.Touch, touched bool) (status string, until time.Time, expires bool) {
	last := r.LastActivityAt
	if c != nil {
		last = latest(last, c.LastSeenAt, c.LastDisconnectedAt)
	}
	if touched {
		last = latest(last, t.At)
	}
	if seen, ok := live[r.ClientID]; ok {
		if l := latest(last, seen); now.Sub(l) <= h.cfg.StaleAfter {
			return raftstore.StatusFresh, l.Add(h.cfg.StaleAfter), true
		}
		return raftstore.StatusStale, time.Time{}, false
	}
	if now.Sub(last) > h.cfg.LostAfter {
		return raftstore.StatusLost, time.Time{}, false
	}
	return raftstore.StatusStale, last.Add(h.cfg.LostAfter), true
}

func latest(ts ...time.Time) time.Time {
	var m time.Time
	for _, t := range ts {
		if t.After(m) {
			m = t
		}
	}
	return m
}
