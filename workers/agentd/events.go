package agentd

import "sync"

// hub fans events out to WebSocket subscribers and keeps the last few for
// status. A slow subscriber loses events (its buffer is full) rather than
// holding up the child's reader.
type hub struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	last   []Event
	closed bool
}

type subscriber struct {
	ch       chan Event
	mu       sync.Mutex
	sessions map[string]bool // empty: every session
}

const hubRecent = 50

func newHub() *hub { return &hub{subs: map[*subscriber]struct{}{}} }

func (h *hub) publish(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Type != "item/agentMessage/delta" {
		h.last = append(h.last, e)
		if len(h.last) > hubRecent {
			h.last = append([]Event(nil), h.last[len(h.last)-hubRecent:]...)
		}
	}
	for s := range h.subs {
		if !s.wants(e.SessionID) {
			continue
		}
		select {
		case s.ch <- e:
		default:
		}
	}
}

func (h *hub) recent() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event{}, h.last...)
}

func (h *hub) subscribe() *subscriber {
	s := &subscriber{ch: make(chan Event, 1024), sessions: map[string]bool{}}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(s.ch)
		return s
	}
	h.subs[s] = struct{}{}
	return s
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.ch)
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		delete(h.subs, s)
		close(s.ch)
	}
}

func (s *subscriber) wants(session string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions) == 0 || session == "" || s.sessions[session]
}

func (s *subscriber) set(session string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.sessions[session] = true
	} else {
		delete(s.sessions, session)
	}
}
