package e2e

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// An SSE answer's headers wait for the first event to go out with it
// (issue 15), but only briefly: a caller whose plugin has not answered at
// all still gets the status line and X-Relay-Request-Id, and then the
// events as they come.
func TestSSEHeadersComeBeforeASlowPluginAnswers(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t)
	p := connectPlugin(t, d, "sse-headers", nil, func(o *fakeplugin.Options) { o.Manual = true })

	body := `{"platform":"platform_c","path":"/api/stream","responseMode":"sse","requestId":"sse-slow","timeoutMs":60000}`
	req, _ := http.NewRequest("POST", d.URL+"/v1/browser/request", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+d.Token)
	req.Header.Set("Content-Type", "application/json")
	// A bound for liveness only: far above the header delay, far below
	// the request's own 60 s timeout (which would also send headers).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("no headers while the plugin is silent: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Relay-Request-Id") != "sse-slow" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("headers: %d %v", resp.StatusCode, resp.Header)
	}
	if _, err := p.WaitFor(5*time.Second, bridgeproto.TypeAPIRequest, nil); err != nil {
		t.Fatal(err)
	}
	send(t, p, bridgeproto.StreamOpen{Type: bridgeproto.TypeStreamOpen, RequestID: "sse-slow", Status: 200})
	send(t, p, bridgeproto.StreamEvent{Type: bridgeproto.TypeStreamEvent, RequestID: "sse-slow", Seq: 1, Data: "hello"})
	send(t, p, bridgeproto.StreamEnd{Type: bridgeproto.TypeStreamEnd, RequestID: "sse-slow"})
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, ev)
		}
	}
	if got := strings.Join(events, ","); got != "stream_open,stream_event,stream_end" {
		t.Fatalf("events %s", got)
	}
}
