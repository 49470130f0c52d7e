package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// relayRequestIDHeader names the relayed request on an SSE relay answer
// (docs/bridge-protocol.md), so a stream_error this node adds can name it.
const relayRequestIDHeader = "X-Relay-Request-Id"

// guardSSE makes a forwarded Server-Sent Events answer end with an event
// even when the leader dies mid-stream. Without it the proxy could only cut
// the caller's connection: the caller, still talking to a live standby, saw
// a stream stop with neither stream_end nor stream_error (found by the
// chaos run, e2e/chaos). Events pass through whole, as the leader flushed
// them; a partial event the leader did not finish is dropped, and a final
// stream_error with code leader_unreachable says why the stream ended.
func guardSSE(resp *http.Response, leaderID, leaderAddr string) {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return
	}
	reqID := resp.Header.Get(relayRequestIDHeader)
	resp.Body = &sseGuard{src: resp.Body, onErr: func(err error) []byte {
		b, _ := json.Marshal(map[string]any{
			"requestId": reqID,
			"code":      "leader_unreachable",
			"message":   fmt.Sprintf("the leader %s at %s went away mid-stream (%v); the request may have reached the platform", leaderID, leaderAddr, err),
		})
		return []byte("event: stream_error\ndata: " + string(b) + "\n\n")
	}}
}

// sseGuard passes complete events ("\n\n"-terminated) of src through and,
// when src fails, the event onErr gives instead of the unfinished rest.
type sseGuard struct {
	src     io.ReadCloser
	onErr   func(error) []byte
	buf     []byte
	partial []byte // read, not yet a complete event
	out     []byte // ready for the caller
	done    bool
}

func (g *sseGuard) Read(p []byte) (int, error) {
	for {
		if len(g.out) > 0 {
			n := copy(p, g.out)
			g.out = g.out[n:]
			return n, nil
		}
		if g.done {
			return 0, io.EOF
		}
		if g.buf == nil {
			g.buf = make([]byte, 32<<10)
		}
		n, err := g.src.Read(g.buf)
		g.partial = append(g.partial, g.buf[:n]...)
		if i := bytes.LastIndex(g.partial, []byte("\n\n")); i >= 0 {
			g.out = append(g.out[:0], g.partial[:i+2]...)
			g.partial = append(g.partial[:0], g.partial[i+2:]...)
		}
		switch {
		case err == io.EOF:
			g.out = append(g.out, g.partial...)
			g.partial, g.done = nil, true
		case err != nil:
			g.out = append(g.out, g.onErr(err)...)
			g.partial, g.done = nil, true
		}
	}
}

func (g *sseGuard) Close() error { return g.src.Close() }
