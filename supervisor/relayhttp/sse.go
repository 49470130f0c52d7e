package relayhttp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/bridge"
)

// sseWriter writes Server-Sent Events and flushes each one.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (e sseWriter) event(name string, data any) error {
	if err := e.write(name, data); err != nil {
		return err
	}
	return e.rc.Flush()
}

// write writes one event without flushing it.
func (e sseWriter) write(name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b)
	return err
}

// sseStreamEvent is a stream_event's data. Its fields are in the order
// json.Marshal writes a map's keys (sorted), so the bytes are the ones the
// generic map gave, without building and sorting a map per event.
type sseStreamEvent struct {
	ClientID  string `json:"clientId"`
	Data      string `json:"data"`
	Event     string `json:"event"`
	Platform  string `json:"platform"`
	RequestID string `json:"requestId"`
	Seq       int64  `json:"seq"`
}

// headerDelay is how long an SSE answer's status line and headers wait to
// go out together with the first event (performance, issue 15: one write
// and one wake-up of the caller fewer, while the plugin is at work). A
// plugin slower than this gets them on their own, so a caller still learns
// at once that the stream is accepted.
const headerDelay = 20 * time.Millisecond

// firstFrame waits up to headerDelay for p's first frame; without one the
// headers are flushed and nil is returned (the caller's loop then waits as
// usual, and also sees the caller leaving or p ending).
func firstFrame(ctx context.Context, p *bridge.Pending, sse sseWriter) bridgeproto.Message {
	t := time.NewTimer(headerDelay)
	defer t.Stop()
	select {
	case m := <-p.C:
		return m
	case <-t.C:
		_ = sse.rc.Flush()
	case <-ctx.Done():
	case <-p.Done():
	}
	return nil
}
