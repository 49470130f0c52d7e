package bridge

import "sync/atomic"

// finishedMemory is how many finished request and action ids the hub
// remembers. A plugin cannot know about a cancel or a timeout before it
// sends its next frame, so frames for a recently finished id are expected
// and dropped quietly; an id the daemon never issued (or finished long ago)
// is a plugin bug and still gets an unknown_request error.
const finishedMemory = 4096

// finishedIDs remembers the last finishedMemory ids with the client each was
// sent to, in a ring; the hub's mutex guards it.
type finishedIDs struct {
	ring  []string
	next  int
	owner map[string]string // id → clientId
}

func newFinishedIDs(n int) *finishedIDs {
	return &finishedIDs{ring: make([]string, n), owner: make(map[string]string, n)}
}

func (f *finishedIDs) add(id, clientID string) {
	if old := f.ring[f.next]; old != "" {
		delete(f.owner, old)
	}
	f.ring[f.next] = id
	f.owner[id] = clientID
	f.next = (f.next + 1) % len(f.ring)
}

// by reports whether id finished recently after being sent to clientID.
func (f *finishedIDs) by(id, clientID string) bool {
	owner, ok := f.owner[id]
	return ok && owner == clientID
}

// lateFrames counts frames dropped quietly because their request or action
// had already finished (cancelled, timed out, answered, overflowed).
type lateFrames struct{ n atomic.Uint64 }

// LateFrames is how many such frames the hub has dropped since it started
// (exported as svcd_browser_late_frames_total).
func (h *Hub) LateFrames() uint64 { return h.late.n.Load() }

// recentlyFinished reports whether id was finished recently for c's client.
func (h *Hub) recentlyFinished(id string, c *Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.finished.by(id, c.clientID)
}
