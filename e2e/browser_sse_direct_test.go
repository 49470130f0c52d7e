package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// A running stream's lone events are written to the caller by the
// connection's reader, bursts go through the handler (issue 15, fourth
// pass). Mixed, they must keep their order, and a stream whose events keep
// coming more often than timeoutMs must not time out, however long it runs.
func TestSSEDirectAndQueuedEventsKeepOrderAndTheStreamAlive(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t)
	p := connectPlugin(t, d, "sse-direct", nil, func(o *fakeplugin.Options) { o.Manual = true })

	resp := openSSE(t, d.URL, d.Token, `{"platform":"platform_c","path":"/api/stream","responseMode":"sse","requestId":"sse-mixed","timeoutMs":300}`)
	defer resp.Body.Close()
	if _, err := p.WaitFor(5*time.Second, bridgeproto.TypeAPIRequest, nil); err != nil {
		t.Fatal(err)
	}
	send(t, p, bridgeproto.StreamOpen{Type: bridgeproto.TypeStreamOpen, RequestID: "sse-mixed", Status: 200})
	seq := int64(0)
	event := func() {
		seq++
		send(t, p, bridgeproto.StreamEvent{Type: bridgeproto.TypeStreamEvent, RequestID: "sse-mixed", Seq: seq, Data: "e" + strconv.FormatInt(seq, 10)})
	}
	// Lone events 100 ms apart for 600 ms (twice timeoutMs: only the
	// reader sees them), then each followed by a burst that queues behind it.
	for round := 0; round < 9; round++ {
		time.Sleep(100 * time.Millisecond)
		event()
		for i := 0; round >= 6 && i < 20; i++ {
			event()
		}
	}
	send(t, p, bridgeproto.StreamEnd{Type: bridgeproto.TypeStreamEnd, RequestID: "sse-mixed"})

	var names []string
	want := int64(1)
	sc := bufio.NewScanner(resp.Body)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if ev, ok := strings.CutPrefix(line, "event: "); ok {
			name = ev
			names = append(names, ev)
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || name != bridgeproto.TypeStreamEvent {
			continue
		}
		var ev struct {
			Seq  int64  `json:"seq"`
			Data string `json:"data"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Seq != want || ev.Data != "e"+strconv.FormatInt(want, 10) {
			t.Fatalf("event %d out of order: %s", want, data)
		}
		want++
	}
	if want != seq+1 || names[0] != bridgeproto.TypeStreamOpen || names[len(names)-1] != bridgeproto.TypeStreamEnd {
		t.Fatalf("%d of %d events; first %s, last %s", want-1, seq, names[0], names[len(names)-1])
	}
}

// A caller that leaves in the middle of a stream of lone events (written
// by the reader) still cancels the page's request, and the connection
// goes on serving.
func TestSSECallerLeavingDuringLoneEventsCancels(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t)
	plat := fakeplugin.NewPlatform("direct")
	defer plat.Close()
	p := connectPlugin(t, d, "sse-leave", plat)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cctx, leave := context.WithCancel(ctx)
	_, events, raw := postSSE(t, cctx, d.URL+"/v1/browser/request",
		map[string]any{"platform": "platform_b", "path": "/api/stream?n=500&delay_ms=5", "responseMode": "sse", "requestId": "leave-1"},
		func(ev sseEvent) bool { return ev.Name == "stream_event" && ev.Data["seq"] == float64(3) })
	leave()
	if len(events) != 4 {
		t.Fatalf("before leaving: %s", raw)
	}
	waitUntil(t, 5*time.Second, "request_cancel after the caller left", func() bool { return contains(p.Cancels(), "leave-1") })
	status, events, raw := postSSE(t, ctx, d.URL+"/v1/browser/request",
		map[string]any{"platform": "platform_b", "path": "/api/stream?n=3&delay_ms=2", "responseMode": "sse"}, nil)
	if status != 200 || len(events) != 5 || events[4].Name != bridgeproto.TypeStreamEnd {
		t.Fatalf("next stream: %d %s", status, raw)
	}
}

func openSSE(t *testing.T, base, token, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/browser/request", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("SSE request: %d", resp.StatusCode)
	}
	return resp
}

// A caller that stops reading a stream must not hold up the plugin's other
// requests. Lone events are written to the caller by the connection's
// reader; once the caller's socket is full that write blocks, and without
// a bound every frame of that plugin (here a buffered answer to another
// caller) would wait behind it for good. The stalled caller loses its
// stream after the bound, as a consumer stuck in the handler always did.
func TestSSEStalledCallerDoesNotHoldUpTheConnection(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t)
	p := connectPlugin(t, d, "sse-stall", nil, func(o *fakeplugin.Options) { o.Manual = true })

	stalled := openSSE(t, d.URL, d.Token, `{"platform":"platform_c","path":"/api/stream","responseMode":"sse","requestId":"stall-1","timeoutMs":60000}`)
	defer stalled.Body.Close() // never read: its socket fills up
	if _, err := p.WaitFor(5*time.Second, bridgeproto.TypeAPIRequest, nil); err != nil {
		t.Fatal(err)
	}
	send(t, p, bridgeproto.StreamOpen{Type: bridgeproto.TypeStreamOpen, RequestID: "stall-1", Status: 200})
	// 48 lone events of 512 KiB (24 MiB) are more than loopback's socket
	// buffers hold; each goes out alone, 2 ms after the one before.
	chunk := strings.Repeat("x", 512<<10)
	for seq := int64(1); seq <= 48; seq++ {
		time.Sleep(2 * time.Millisecond)
		send(t, p, bridgeproto.StreamEvent{Type: bridgeproto.TypeStreamEvent, RequestID: "stall-1", Seq: seq, Data: chunk})
	}

	// Another caller's buffered request through the same plugin.
	type answer struct {
		status int
		body   string
	}
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("POST", d.URL+"/v1/browser/request",
			strings.NewReader(`{"platform":"platform_c","path":"/api/other","requestId":"other-1","timeoutMs":20000}`))
		req.Header.Set("Authorization", "Bearer "+d.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{0, err.Error()}
			return
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		got <- answer{resp.StatusCode, b.String()}
	}()
	if _, err := p.WaitFor(10*time.Second, bridgeproto.TypeAPIRequest, func(m fakeplugin.Msg) bool {
		return strings.Contains(string(m.Raw), `"other-1"`)
	}); err != nil {
		t.Fatal(err)
	}
	send(t, p, bridgeproto.APIResponse{Type: bridgeproto.TypeAPIResponse, RequestID: "other-1", Status: 200, Body: "still here"})
	select {
	case a := <-got:
		if a.status != 200 || !strings.Contains(a.body, "still here") {
			t.Fatalf("the other caller got %d %s", a.status, a.body)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the other caller's answer is stuck behind the stalled stream")
	}
	// The stalled stream was given up: the page's request is cancelled.
	waitUntil(t, 10*time.Second, "request_cancel of the stalled stream", func() bool { return contains(p.Cancels(), "stall-1") })
}
