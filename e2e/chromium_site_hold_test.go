package e2e

import (
	"net/http"
	"time"
)

// siteHold is one send request the fake site holds before it answers: the
// page's fetch stays open, so the extension has typed the text but does not
// know yet that it was sent.
type siteHold struct {
	text    string
	arrived chan struct{}
	release chan struct{}
}

// holdSend makes the site hold its answer to the next send request whose
// message contains text (it is recorded as sent on arrival) until release
// is called; arrived is closed when that request came in.
func (s *fakeSite) holdSend(text string) (arrived <-chan struct{}, release func()) {
	h := &siteHold{text: text, arrived: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	s.hold = h
	s.mu.Unlock()
	return h.arrived, func() { close(h.release) }
}

func (h *siteHold) wait(r *http.Request) {
	close(h.arrived)
	select {
	case <-h.release:
	case <-r.Context().Done():
	case <-time.After(30 * time.Second): // a test that never releases
	}
}
