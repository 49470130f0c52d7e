package e2e

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// Frames for a request the daemon just finished (timed out, cancelled,
// answered) are dropped quietly and counted: a plugin cannot know about a
// cancel before it sends. An id the daemon never issued still gets an
// unknown_request error (a plugin bug).
func TestLateFramesAreDroppedQuietly(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t)
	p := connectPlugin(t, d, "late-frames", nil, func(o *fakeplugin.Options) { o.Manual = true })

	// Timed out: the daemon answers 504, then the plugin's answer arrives.
	resp := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo", "requestId": "late-timeout", "timeoutMs": 200})
	wantError(t, resp, 504, "relay_timeout")
	send(t, p, bridgeproto.APIResponse{Type: bridgeproto.TypeAPIResponse, RequestID: "late-timeout", Status: 200, Body: "too late"})

	// Cancelled SSE stream: frames keep coming after the cancel. (Another
	// platform: the timeout above put platform_b's target into backoff.)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_c", "path": "/api/stream", "responseMode": "sse", "requestId": "late-cancel", "timeoutMs": 5000})
	}()
	if _, err := p.WaitFor(5*time.Second, bridgeproto.TypeAPIRequest, func(m fakeplugin.Msg) bool { return bytes.Contains(m.Raw, []byte("late-cancel")) }); err != nil {
		t.Fatal(err)
	}
	send(t, p, bridgeproto.StreamOpen{Type: bridgeproto.TypeStreamOpen, RequestID: "late-cancel", Status: 200})
	if r := d.Do("POST", "/v1/browser/request/cancel", map[string]any{"platform": "platform_c", "requestId": "late-cancel"}); r.Status != 200 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	<-done
	for seq := int64(1); seq <= 3; seq++ {
		send(t, p, bridgeproto.StreamEvent{Type: bridgeproto.TypeStreamEvent, RequestID: "late-cancel", Seq: seq, Data: "late"})
	}
	send(t, p, bridgeproto.StreamEnd{Type: bridgeproto.TypeStreamEnd, RequestID: "late-cancel"})

	// A round trip proves every frame above has been read by the daemon.
	send(t, p, bridgeproto.APIResponse{Type: bridgeproto.TypeAPIResponse, RequestID: "never-issued", Status: 200})
	errMsg, err := p.WaitFor(5*time.Second, bridgeproto.TypeError, nil)
	if err != nil {
		t.Fatalf("an id the daemon never issued must still be answered with an error: %v", err)
	}
	if !bytes.Contains(errMsg.Raw, []byte("unknown_request")) || !bytes.Contains(errMsg.Raw, []byte("never-issued")) {
		t.Fatalf("error for the never-issued id: %s", errMsg.Raw)
	}
	if n := p.Count(bridgeproto.TypeError); n != 1 {
		for _, m := range p.Messages() {
			if m.Type == bridgeproto.TypeError {
				t.Logf("error frame: %s", m.Raw)
			}
		}
		t.Fatalf("%d error frames; only the never-issued id may get one", n)
	}
	if got := lateFrameCount(t, d.Do("GET", "/metrics", nil).Body); got < 5 {
		t.Fatalf("svcd_browser_late_frames_total = %v, want at least the 5 late frames sent", got)
	}
	// The connection is still healthy: it was not closed as a flood.
	send(t, p, bridgeproto.Keepalive{Type: bridgeproto.TypeKeepalive})
	if err := p.CloseErr(); err != nil {
		t.Fatalf("the connection closed: %v", err)
	}
}

func send(t *testing.T, p *fakeplugin.Plugin, v any) {
	t.Helper()
	if err := p.Send(v); err != nil {
		t.Fatal(err)
	}
}

func lateFrameCount(t *testing.T, metrics []byte) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^svcd_browser_late_frames_total (\S+)$`).FindSubmatch(metrics)
	if m == nil {
		t.Fatalf("no svcd_browser_late_frames_total in /metrics")
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
