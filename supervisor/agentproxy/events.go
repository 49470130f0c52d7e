package agentproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/shared/api"
)

// EventsContentType is GET /v1/agent/events' media type.
const EventsContentType = "text/event-stream"

// OpenEvent is the name of the stream's first event (Open): from it on,
// every agentd event is in the stream.
const OpenEvent = "open"

// Open is the data of the open event.
type Open struct {
	AgentdURL string `json:"agentd_url"`
	SessionID string `json:"sessionId,omitempty"`
}

// EndEvent is the name of the stream's last event. Its data says why the
// stream ended; a client that sees the body end without it lost the
// connection (or the main daemon went away).
const EndEvent = "end"

// End is the data of the end event.
type End struct {
	// Reason is agentd_gone (agentd closed its event stream: it stopped,
	// restarted or died; reconnect once GET /v1/agent answers again).
	Reason string         `json:"reason"`
	Error  api.ErrorField `json:"error"`
}

// keepAlive is how often an idle stream carries an SSE comment, so proxies
// keep it open and a client that went away is noticed by the failed write.
const keepAlive = 15 * time.Second

// Events streams agentd's event WebSocket to the caller as server-sent
// events: first the open event, then one `data:` line per agentd event (its JSON as agentd sent it),
// each flushed at once: nothing is buffered. session, when set, limits the
// stream to that session's events (and the ones of no session, such as the
// child's start and exit). agentd not answering is a 503 agent_unavailable
// before the stream starts; agentd going away later ends the stream with the
// end event (End).
func (p *Proxy) Events(w http.ResponseWriter, r *http.Request, session string) error {
	u := url.URL{Scheme: "ws", Host: p.base[len("http://"):], Path: "/v1/agentd/events"}
	h := http.Header{"Authorization": {"Bearer " + p.token}}
	challenge := p.challenge(h)
	dctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	conn, resp, err := websocket.DefaultDialer.DialContext(dctx, u.String(), h)
	cancel()
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return unavailable(err)
	}
	defer conn.Close()
	if err := p.checkProof(challenge, resp.Header); err != nil {
		return err
	}
	if session != "" {
		if err := subscribe(conn, session); err != nil {
			return unavailable(err)
		}
	}
	// The caller going away ends the request's context: close the socket,
	// which ends the read below.
	stop := context.AfterFunc(r.Context(), func() { conn.Close() })
	defer stop()

	hd := w.Header()
	hd.Set("Content-Type", EventsContentType)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// The open event says the stream is live (and filtered): what happens
	// from here on is in it.
	ob, _ := json.Marshal(Open{AgentdURL: p.base, SessionID: session})
	_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", OpenEvent, ob)
	_ = rc.Flush()

	msgs := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				readErr <- err
				close(msgs)
				return
			}
			select {
			case msgs <- b:
			case <-r.Context().Done():
				readErr <- r.Context().Err()
				close(msgs)
				return
			}
		}
	}()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case b, ok := <-msgs:
			if !ok {
				err := <-readErr
				if r.Context().Err() != nil {
					return nil // the caller left: nobody to tell
				}
				end := End{Reason: "agentd_gone", Error: api.ErrorField{Code: "agent_unavailable",
					Message: fmt.Sprintf("agentd closed its event stream (%v); it stopped or restarted: reconnect once GET /v1/agent answers", err)}}
				eb, _ := json.Marshal(end)
				_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", EndEvent, eb)
				_ = rc.Flush()
				return nil
			}
			b = bytes.TrimSpace(b) // one JSON line; no newline may end the data field early
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return nil
			}
			if rc.Flush() != nil {
				return nil
			}
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		}
	}
}

// subscribe limits agentd's stream to session and waits for agentd's ack,
// so the filter holds before the caller is told the stream is open. Events
// before the ack (of any session: the filter was not set yet) are dropped.
func subscribe(conn *websocket.Conn, session string) error {
	if err := conn.WriteJSON(map[string]string{"type": "subscribe", "sessionId": session}); err != nil {
		return err
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer conn.SetReadDeadline(time.Time{})
	for {
		_, b, err := conn.ReadMessage()
		if err != nil {
			return err
		}
		var m struct {
			Type string `json:"type"`
			For  string `json:"for"`
		}
		if json.Unmarshal(b, &m) == nil && m.Type == "agentd/ack" && m.For == "subscribe" {
			return nil
		}
	}
}
