package bridge

import (
	"sync"
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

// deliverWait is how long the connection's reader waits for a full
// consumer before giving up on it. While it waits the plugin's frames stay
// in TCP buffers, which is the back-pressure a burst (a fast stream to a
// slower HTTP caller) needs; a consumer stuck longer loses its stream
// rather than stalling every other request on the connection.
const deliverWait = 2 * time.Second

// deliver hands a frame to the waiting handler. It reports false when the
// consumer did not take it within deliverWait or is gone.
func (p *Pending) deliver(m bridgeproto.Message) bool {
	select {
	case p.C <- m:
		return true
	default:
	}
	t := time.NewTimer(deliverWait)
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
