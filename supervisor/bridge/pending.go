package bridge

import (
	"sync"

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

// deliver hands a frame to the waiting handler without ever blocking the
// connection's reader: a consumer that cannot keep up loses its stream.
func (p *Pending) deliver(m bridgeproto.Message) bool {
	select {
	case p.C <- m:
		return true
	default:
		return false
	}
}

// track registers p so the plugin's answers reach it.
func (h *Hub) track(p *Pending) {
	h.mu.Lock()
	h.pending[p.ID] = p
	h.mu.Unlock()
}

// Finish forgets p. Handlers call it when they stop waiting.
func (h *Hub) Finish(p *Pending) {
	h.mu.Lock()
	if h.pending[p.ID] == p {
		delete(h.pending, p.ID)
	}
	h.mu.Unlock()
	p.fail("finished", "finished")
}

func (h *Hub) lookup(id string) *Pending {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pending[id]
}
