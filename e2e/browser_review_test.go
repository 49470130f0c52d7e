package e2e

import (
	"context"
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
	waitUntil(t, 10*time.Second, "request_cancel for the oversized answer", func() bool { return contains(p.Cancels(), "big-1") })
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

// A record is keyed <platform>/<clientId>/<account>. Two different clients
// must never share a record, whatever their ids and account labels: a
// clientId "c1/x" with account "y" and a clientId "c1" with account "x/y"
// gave the same key, so one plugin's login overwrote the other's record.
func TestBrowserRecordKeysDoNotCollide(t *testing.T) {
	d := startBrowserDaemon(t)
	a := connectPlugin(t, d, "c1", nil)
	capture(t, d, a, "platform_a", "x/y", map[string]string{"Authorization": "Bearer a"})
	before := readModel(t, d, "?client_id=c1")
	if len(before.Records) != 1 {
		t.Fatalf("records of c1: %+v", before.Records)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, _, err := fakeplugin.Dial(ctx, fakeplugin.Options{URL: wsURL(d), Token: d.Token, ClientID: "c1/x"})
	if err == nil {
		t.Cleanup(func() { b.Close() })
		_ = b.Send(bridgeproto.Credentials{Type: bridgeproto.TypeCredentials, Platform: "platform_a", Account: "y", Headers: map[string]string{"Authorization": "Bearer b"}})
		_ = b.Send(bridgeproto.Keepalive{Type: bridgeproto.TypeKeepalive})
		time.Sleep(300 * time.Millisecond)
	}
	after := readModel(t, d, "?client_id=c1")
	if len(after.Records) != 1 || after.Records[0].CredentialFingerprint != before.Records[0].CredentialFingerprint || after.Records[0].Account != "x/y" {
		t.Fatalf("c1's record was taken over by another client:\nbefore %+v\nafter  %+v", before.Records, after.Records)
	}
}

// A request refused for a duplicate requestId was never sent, so it must
// not spend a slot of the target's rate-limit window.
func TestBrowserDuplicateRequestIDSpendsNoWindowSlot(t *testing.T) {
	d := startBrowserDaemon(t, "SVC_RELAY_WINDOW_MAX=2", "SVC_RELAY_WINDOW_MS=600000")
	p := connectPlugin(t, d, "dup-window", nil, func(o *fakeplugin.Options) { o.Manual = true })
	first := make(chan *harness.Response, 1)
	go func() {
		first <- d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo", "requestId": "dup-1", "timeoutMs": 3000})
	}()
	if _, err := p.WaitFor(5*time.Second, bridgeproto.TypeAPIRequest, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo", "requestId": "dup-1"}), 409, "duplicate_request_id")
	}
	// The window holds two: dup-1 and this one.
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo", "requestId": "other-1", "timeoutMs": 200}), 504, "relay_timeout")
	<-first
}
