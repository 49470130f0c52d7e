package bridge

import (
	"time"

	"github.com/gorilla/websocket"
)

// Unpaired places under pressure. A real plugin sends its hello the moment
// its socket opens (milliseconds); a local process can instead open sockets
// and stay silent to hold every one of MaxUnpaired places and keep the
// extension out. Two rules make that cost the attacker instead:
//
//   - past half the places, the hello deadline is PressureAuthTimeout, for
//     the sockets already waiting too;
//   - with every place taken, a new connection evicts the oldest socket
//     that has been silent for at least MinSilentToEvict, instead of being
//     refused: a newcomer that says hello at once pairs before an attacker
//     can cycle through every place to evict it.
//
// Rate limits by remote address do not tell a local attacker from the
// extension (both are 127.0.0.1, and Linux draws both their source ports
// from the same per-destination sequence), so they are not used.
const (
	PressureAuthTimeout = time.Second
	MinSilentToEvict    = 100 * time.Millisecond
)

// waiter is one upgraded connection waiting for its hello.
type waiter struct {
	since, deadline time.Time
	evicted         bool
}

// claimUnpaired takes one of MaxUnpaired places for a connection that has
// not said hello yet, evicting the oldest silent one when all are taken;
// releaseUnpaired gives it back once pairing is decided.
func (h *Hub) claimUnpaired() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unpaired >= h.cfg.MaxUnpaired && !h.evictOldestLocked(time.Now()) {
		return false
	}
	h.unpaired++
	return true
}

// evictOldestLocked ends the wait of the oldest connection silent for at
// least MinSilentToEvict (its read deadline passes now, so its own goroutine
// closes it and gives its place back). h.mu is held.
func (h *Hub) evictOldestLocked(now time.Time) bool {
	var oldest *websocket.Conn
	var w *waiter
	for ws, cand := range h.waiting {
		if cand.evicted || now.Sub(cand.since) < MinSilentToEvict {
			continue
		}
		if w == nil || cand.since.Before(w.since) {
			oldest, w = ws, cand
		}
	}
	if w == nil {
		return false
	}
	w.evicted = true
	_ = oldest.SetReadDeadline(now)
	h.log.Warn("browser bridge: every unpaired place taken; the oldest silent connection gave its place to a new one",
		"silent_for_ms", now.Sub(w.since).Milliseconds(), "limit", h.cfg.MaxUnpaired)
	return true
}

func (h *Hub) releaseUnpaired() {
	h.mu.Lock()
	h.unpaired--
	h.mu.Unlock()
}

// awaitHello sets ws's deadline for its hello and remembers it while it
// waits, shortening every wait under pressure (see above).
func (h *Hub) awaitHello(ws *websocket.Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiting == nil {
		h.waiting = map[*websocket.Conn]*waiter{}
	}
	now := time.Now()
	w := &waiter{since: now, deadline: now.Add(h.cfg.AuthTimeout)}
	if h.unpaired > h.cfg.MaxUnpaired/2 {
		short := now.Add(min(PressureAuthTimeout, h.cfg.AuthTimeout))
		w.deadline = short
		for other, ow := range h.waiting {
			if ow.deadline.After(short) {
				ow.deadline = short
				_ = other.SetReadDeadline(short)
			}
		}
		if !h.pressureLogged {
			h.pressureLogged = true
			h.log.Warn("browser bridge: many connections waiting for their hello; hello deadline shortened", "waiting", h.unpaired, "limit", h.cfg.MaxUnpaired, "deadline", PressureAuthTimeout)
		}
	} else {
		h.pressureLogged = false
	}
	h.waiting[ws] = w
	_ = ws.SetReadDeadline(w.deadline)
}

// helloDecided forgets ws once its hello was accepted or refused.
func (h *Hub) helloDecided(ws *websocket.Conn) {
	h.mu.Lock()
	delete(h.waiting, ws)
	h.mu.Unlock()
}
