package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"

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

// Every platform's relay policy target carries the same identity and
// activity fields, platform_c (raw relay, usually with no captured record)
// included, and they survive a daemon restart.
func TestPolicyTargetsOfAllPlatformsCarryTheSameFields(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t)
	platform := fakeplugin.NewPlatform("policy-secret")
	defer platform.Close()
	p := connectPlugin(t, d, "policy-client", platform)
	capture(t, d, p, bridgeproto.PlatformA, "acct-a", map[string]string{"Authorization": "Bearer a"})
	capture(t, d, p, bridgeproto.PlatformB, "acct-b", map[string]string{"Authorization": "Bearer b"})
	for _, pl := range []string{bridgeproto.PlatformA, bridgeproto.PlatformB, bridgeproto.PlatformC} {
		if r := d.Do("POST", "/v1/browser/request", map[string]any{"platform": pl, "path": "/api/echo", "method": "GET"}); r.Status != 200 {
			t.Fatalf("%s relay: %d %s", pl, r.Status, r.Body)
		}
	}
	check := func(when string) {
		t.Helper()
		var env struct {
			Data struct {
				Policy struct {
					Targets map[string]map[string]any `json:"targets"`
				} `json:"policy"`
			} `json:"data"`
		}
		d.Do("GET", "/v1/browser", nil).Decode(t, &env)
		seen := map[string]bool{}
		for key, tgt := range env.Data.Policy.Targets {
			pl, _ := tgt["platform"].(string)
			seen[pl] = true
			for _, field := range []string{"platform", "client_id", "account", "last_activity_at", "last_activity_kind", "stale_sweep_count", "relay", "in_flight", "waiting"} {
				if _, ok := tgt[field]; !ok {
					t.Errorf("%s: target %s lacks %q: %v", when, key, field, tgt)
				}
			}
			if tgt["client_id"] != "policy-client" {
				t.Errorf("%s: target %s client_id %v", when, key, tgt["client_id"])
			}
		}
		for _, pl := range []string{bridgeproto.PlatformA, bridgeproto.PlatformB, bridgeproto.PlatformC} {
			if !seen[pl] {
				t.Errorf("%s: no policy target for %s: %v", when, pl, env.Data.Policy.Targets)
			}
		}
	}
	check("live")
	// The relay state reaches raft on its flush interval (200 ms here), on
	// a loaded machine later: restart once every target's persisted record
	// is there (the read model keeps its updated_at, zero before the first
	// flush), not after a fixed 600 ms.
	waitUntil(t, 15*time.Second, "every target's relay state in raft", func() bool {
		var env struct {
			Data struct {
				Policy struct {
					Targets map[string]struct {
						Relay struct {
							UpdatedAt time.Time `json:"updated_at"`
						} `json:"relay"`
					} `json:"targets"`
				} `json:"policy"`
			} `json:"data"`
		}
		d.Do("GET", "/v1/browser", nil).Decode(t, &env)
		for _, tgt := range env.Data.Policy.Targets {
			if tgt.Relay.UpdatedAt.IsZero() {
				return false
			}
		}
		return len(env.Data.Policy.Targets) >= 3
	})
	d.Restart()
	check("after restart")
}

// A plugin that stops answering (no data, no pong) is closed with 4408 once
// the read deadline (3 × keepalive) passes, so it can tell a dead link from
// a daemon shutdown (1001) or a replacement (4409).
func TestReadDeadlineClosesWith4408(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t, "SVC_BROWSER_KEEPALIVE_MS=100")
	ws, _, err := websocket.DefaultDialer.Dial(wsURL(d), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	hello, _ := json.Marshal(bridgeproto.Hello{Type: bridgeproto.TypeHello, Token: d.Token, ClientID: "silent"})
	if err := ws.WriteMessage(websocket.TextMessage, hello); err != nil {
		t.Fatal(err)
	}
	// Answer no ping, and read nothing for well past 3 × 100 ms.
	ws.SetPingHandler(func(string) error { return nil })
	time.Sleep(800 * time.Millisecond)
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, _, err := ws.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != 4408 {
			t.Fatalf("want close 4408 after the read deadline, got %v", err)
		}
		return
	}
}
