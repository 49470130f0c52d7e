package bridge

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcd/svcd/shared/bridgeproto"
)

// Pending is a relayed request or a management action waiting for the
// plugin. Frames for it arrive on C; Done closes when it is finished,
// cancelled or failed (Err then says why).
type Pending struct {
	ID       string
	Kind     string // "request" or "action"
	Platform string
	conn     *Conn

	C    chan bridgeproto.Message
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	errCode string
	errMsg  string
	lastSeq int64

	// Direct delivery of a running stream's events (see SetSink).
	sink     atomic.Pointer[func(*bridgeproto.StreamEvent)]
	writeMu  sync.Mutex   // held by the sink and by the consumer while it writes
	viaC     atomic.Int64 // frames put on C that the consumer has not written yet
	lastAt   int64        // reader only: unix nanos of the previous frame routed
	wasQuiet bool         // reader only: the previous frame came directGap after its own
	directAt atomic.Int64 // unix nanos of the last frame the sink took
}

const (
	kindRequest = "request"
	kindAction  = "action"
)

func newPending(id, kind, platform string, c *Conn, buf int) *Pending {
	return &Pending{ID: id, Kind: kind, Platform: platform, conn: c, C: make(chan bridgeproto.Message, buf), done: make(chan struct{})}
}

// ClientID is the client the pending work went to.
func (p *Pending) ClientID() string { return p.conn.clientID }

// Done closes when the pending work ends for any reason but a normal answer.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Err is the failure code and message once Done is closed.
func (p *Pending) Err() (code, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errCode, p.errMsg
}

func (p *Pending) fail(code, msg string) {
	p.once.Do(func() {
		p.mu.Lock()
		p.errCode, p.errMsg = code, msg
		p.mu.Unlock()
		close(p.done)
	})
}

// directGap is how long a stream must have been quiet, before an event and
// before the frame ahead of it, for the event to go to the sink on the
// reader's goroutine. Events of a burst closer together than this go
// through C, so the consumer writes them with one flush while the reader
// reads on; a lone event (a model's next token) is written at once, without
// waking the consumer's goroutine (issue 15, fourth pass). Asking for two
// quiet gaps keeps a burst that merely stalled for a moment (its sender
// descheduled) on C, where writing it does not stop the reader.
const directGap = 200 * time.Microsecond

// SetSink makes the stream_event frames of p that arrive alone (see
// directGap), with nothing on C that the consumer has not written, go to
// sink on the connection's reader goroutine instead of through C. The sink
// runs under the lock Write takes, so its writes never interleave with the
// consumer's; it must not block on anything but the HTTP caller's
// connection. Frames the consumer takes from C must be
// handled inside Write, which keeps their order with the sink's.
func (p *Pending) SetSink(sink func(*bridgeproto.StreamEvent)) {
	p.sink.Store(&sink)
}

// ClearSink stops direct delivery. The reader calls the sink only while it
// holds the lock, so once a holder of the lock (inside Write, or between
// Lock and Unlock) has cleared it, the sink is never called again: a
// consumer must do so before it stops owning what the sink writes to.
func (p *Pending) ClearSink() { p.sink.Store(nil) }

// Write runs fn, the handling of a frame taken from C, under the sink's
// lock, then counts that frame as written.
func (p *Pending) Write(fn func()) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	defer p.viaC.Add(-1)
	fn()
}

// Lock and Unlock hold off the sink while the consumer writes something
// that is not a frame taken from C (a flush, an error event).
func (p *Pending) Lock()   { p.writeMu.Lock() }
func (p *Pending) Unlock() { p.writeMu.Unlock() }

// LastDirect is when the sink last took a frame (zero if never): the
// consumer's idle timeout counts from it too.
func (p *Pending) LastDirect() time.Time {
	if at := p.directAt.Load(); at != 0 {
		return time.Unix(0, at)
	}
	return time.Time{}
}

// route hands m to the sink or to C; it runs on the reader goroutine. An
// event goes to the sink only when every earlier frame on C was written
// (viaC is 0: only this goroutine adds to it) and the consumer is not
// writing (TryLock: a consumer stuck on a slow caller must not hold up the
// reader, which then queues on C as before).
func (p *Pending) route(m bridgeproto.Message, now int64) bool {
	quiet := now-p.lastAt >= int64(directGap)
	alone := quiet && p.wasQuiet
	p.lastAt, p.wasQuiet = now, quiet
	if ev, ok := m.(*bridgeproto.StreamEvent); ok && alone && p.viaC.Load() == 0 && p.sink.Load() != nil && p.writeMu.TryLock() {
		// Loaded again under the lock: the consumer may have cleared it.
		if sink := p.sink.Load(); sink != nil {
			p.directAt.Store(now)
			(*sink)(ev)
			p.writeMu.Unlock()
			return true
		}
		p.writeMu.Unlock()
	}
	p.viaC.Add(1)
	return p.deliver(m)
}

// DeliverWait is how long the connection's reader waits for a full
// consumer before giving up on it. While it waits the plugin's frames stay
// in TCP buffers, which is the back-pressure a burst (a fast stream to a
// slower HTTP caller) needs; a consumer stuck longer loses its stream
// rather than stalling every other request on the connection.
const DeliverWait = 2 * time.Second

// deliver hands a frame to the waiting handler. It reports false when the
// consumer did not take it within DeliverWait or is gone.
func (p *Pending) deliver(m bridgeproto.Message) bool {
	select {
	case p.C <- m:
		return true
	default:
	}
	t := time.NewTimer(DeliverWait)
	defer t.Stop()
	select {
	case p.C <- m:
		return true
	case <-p.done:
		return false
	case <-t.C:
		return false
	}
}

// ended reports whether p has finished, failed or been cancelled.
func (p *Pending) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// track registers p so the plugin's answers reach it. It reports false when
// the id is already taken: the check and the insert share one lock, or two
// callers racing with one requestId could both pass a separate check and
// the second would silently take over the first one's answers.
func (h *Hub) track(p *Pending) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, taken := h.pending[p.ID]; taken {
		return false
	}
	h.pending[p.ID] = p
	return true
}

// Finish forgets p. Handlers call it when they stop waiting.
func (h *Hub) Finish(p *Pending) {
	h.mu.Lock()
	if h.pending[p.ID] == p {
		delete(h.pending, p.ID)
		h.finished.add(p.ID, p.conn.clientID)
	}
	h.mu.Unlock()
	p.fail("finished", "finished")
}

func (h *Hub) lookup(id string) *Pending {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pending[id]
}
