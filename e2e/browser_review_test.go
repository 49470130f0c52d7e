package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// A buffered relay answered as a stream is assembled in memory. A plugin
// that keeps streaming must not grow that buffer past the cap that bounds
// a buffered answer sent in one piece (the bridge's message size cap): the
// caller gets a 502 and the plugin hears request_cancel.
func TestBrowserBufferedRelayBodyIsCapped(t *testing.T) {
	const maxMsg = 64 << 10
	d := startBrowserDaemon(t, "SVC_BROWSER_MAX_MESSAGE_BYTES=65536")
	p := connectPlugin(t, d, "stream-flood", nil, func(o *fakeplugin.Options) { o.Manual = true })

	got := make(chan *harness.Response, 1)
	go func() {
		got <- d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/big", "requestId": "big-1", "timeoutMs": 10000})
	}()
	if _, err := p.WaitFor(5*time.Second, bridgeproto.TypeAPIRequest, nil); err != nil {
		t.Fatal(err)
	}
	chunk := strings.Repeat("x", 8<<10)
	_ = p.Send(bridgeproto.StreamOpen{Type: bridgeproto.TypeStreamOpen, RequestID: "big-1", Status: 200})
	for i := 1; i <= 4*maxMsg/len(chunk); i++ {
		if err := p.Send(bridgeproto.StreamEvent{Type: bridgeproto.TypeStreamEvent, RequestID: "big-1", Seq: int64(i), Data: chunk}); err != nil {
			t.Fatal(err)
		}
	}
	_ = p.Send(bridgeproto.StreamEnd{Type: bridgeproto.TypeStreamEnd, RequestID: "big-1"})
	var resp *harness.Response
	select {
	case resp = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("buffered request did not finish")
	}
	if len(resp.Body) > 2*maxMsg {
		t.Fatalf("buffered answer of %d bytes went past the %d byte cap", len(resp.Body), maxMsg)
	}
	wantError(t, resp, 502, "response_too_large")
	waitUntil(t, 3*time.Second, "request_cancel for the oversized answer", func() bool { return contains(p.Cancels(), "big-1") })
}

// timeoutMs is validated before anything is sent: a value so large that it
// overflows a duration used to become a negative timer, an instant 504 and
// an api_request the caller never waited for.
func TestBrowserRequestTimeoutMsBounded(t *testing.T) {
	d := startBrowserDaemon(t)
	p := connectPlugin(t, d, "timeout-bound", nil, func(o *fakeplugin.Options) { o.Manual = true })
	for _, ms := range []int64{10_000_000_000_000, 3_600_001} {
		resp := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo", "timeoutMs": ms})
		wantError(t, resp, 422, "invalid_field")
	}
	time.Sleep(200 * time.Millisecond)
	if n := p.Count(bridgeproto.TypeAPIRequest); n != 0 {
		t.Fatalf("a refused request still reached the plugin (%d api_request)", n)
	}
}
