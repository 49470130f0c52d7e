package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// With no plugin connected every browser route answers its documented
// error, and validation comes before the "no client" check.
func TestBrowserWithoutClient(t *testing.T) {
	d := startBrowserDaemon(t)
	rm := readModel(t, d, "")
	if len(rm.Records) != 0 || rm.AutomationConversations == nil || rm.Policy.DefaultStaleLeaseMs != 60000 || !rm.Policy.RelayAvailable {
		t.Fatalf("empty read model: %+v", rm)
	}
	wantError(t, d.Do("GET", "/v1/browser?platform=platform_z", nil), 422, "invalid_platform")
	wantError(t, d.Do("GET", "/v1/browser?status=sleepy", nil), 422, "invalid_status")

	wantError(t, d.Do("POST", "/v1/browser/actions", `{"action":`), 400, "malformed_json")
	wantError(t, d.Do("POST", "/v1/browser/actions", map[string]any{"action": "explode", "platform": "platform_a"}), 422, "invalid_action")
	wantError(t, d.Do("POST", "/v1/browser/actions", map[string]any{"platform": "platform_a"}), 422, "missing_field")
	wantError(t, d.Do("POST", "/v1/browser/actions", map[string]any{"action": "tab_open", "platform": "platform_q"}), 422, "invalid_platform")
	wantError(t, d.Do("POST", "/v1/browser/actions", map[string]any{"action": "tab_open", "platform": "platform_c"}), 422, "invalid_platform")
	wantError(t, d.Do("POST", "/v1/browser/actions", map[string]any{"action": "tab_open"}), 422, "missing_field")
	wantError(t, d.Do("POST", "/v1/browser/actions", map[string]any{"action": "tab_open", "platform": "platform_a"}), 503, "no_browser_client")
	wantError(t, d.Do("POST", "/v1/browser/platform_a/open", nil), 503, "no_browser_client")
	wantError(t, d.Do("POST", "/v1/browser/platform_a/reload", nil), 503, "no_browser_client")

	wantError(t, d.Do("POST", "/v1/browser/request", `[1`), 400, "malformed_json")
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{}), 422, "missing_field")
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_x", "path": "/a"}), 422, "invalid_platform")
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b"}), 422, "missing_field")
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/a", "prompt": "hi"}), 422, "invalid_field")
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_a", "path": "/a", "prompt": "hi"}), 422, "invalid_field")
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/a", "responseMode": "carrier-pigeon"}), 422, "invalid_field")
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "http://evil/"}), 422, "invalid_field")
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/a", "method": "BREW"}), 422, "invalid_field")
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/a"}), 503, "no_browser_client")
	wantError(t, d.Do("POST", "/v1/browser/platform_a/send", map[string]any{"prompt": "hi"}), 503, "no_browser_client")
	wantError(t, d.Do("GET", "/v1/browser/platform_a/current", nil), 503, "no_browser_client")

	wantError(t, d.Do("POST", "/v1/browser/request/cancel", map[string]any{"platform": "platform_a"}), 422, "missing_field")
	wantError(t, d.Do("POST", "/v1/browser/request/cancel", map[string]any{"platform": "platform_a", "requestId": "nope"}), 404, "unknown_request")

	// The routes are described in the scoped describes.
	ctl := string(d.Do("GET", "/describe/control", nil).Body)
	biz := string(d.Do("GET", "/describe/business", nil).Body)
	for _, p := range []string{"/v1/browser/actions", "/ws/browser", "/ws/browser-compat", "/v1/browser/platform_a/open"} {
		if !strings.Contains(ctl, `"`+p+`"`) {
			t.Errorf("describe/control lacks %s", p)
		}
	}
	for _, p := range []string{"/v1/browser", "/v1/browser/request", "/v1/browser/request/cancel", "/v1/browser/platform_a/current"} {
		if !strings.Contains(biz, `"`+p+`"`) {
			t.Errorf("describe/business lacks %s", p)
		}
	}
}

// The bridge refuses foreign origins, proxied requests and bad pairing, and
// keeps the connection after one bad message but not after a flood.
func TestBrowserBridgeGuards(t *testing.T) {
	d := startBrowserDaemon(t, "SVC_BROWSER_MAX_MESSAGE_BYTES=65536")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(path string, h http.Header, skipHello bool, token string) (*fakeplugin.Plugin, *http.Response, error) {
		return fakeplugin.Dial(ctx, fakeplugin.Options{URL: "ws://" + d.Addr + path, Token: token, Header: h, SkipHello: skipHello})
	}
	for name, h := range map[string]http.Header{
		"evil origin":     {"Origin": {"http://evil.example"}},
		"other extension": {"Origin": {"chrome-extension://zzzz"}},
		"forwarded":       {"X-Forwarded-For": {"203.0.113.9"}},
		"forwarded rfc":   {"Forwarded": {"for=203.0.113.9"}},
		"forwarded port":  {"X-Forwarded-Port": {"443"}},
		"forwarded proto": {"X-Forwarded-Proto": {"https"}},
		"forwarded host":  {"X-Forwarded-Host": {"svc.example"}},
		"real ip":         {"X-Real-Ip": {"203.0.113.9"}},
		"client ip":       {"X-Client-Ip": {"203.0.113.9"}},
		"empty xff":       {"X-Forwarded-For": {""}},
	} {
		_, resp, err := dial("/ws/browser", h, false, d.Token)
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s: want 403 handshake refusal, got err=%v resp=%v", name, err, resp)
		}
	}
	// The Host guard applies to the WebSocket path like to every route.
	wantError(t, d.Do("GET", "/ws/browser", nil, "Host: evil.example", "Connection: Upgrade", "Upgrade: websocket"), 403, "host_not_allowed")

	// The allowed extension origin and the compat path pair fine.
	p, _, err := dial("/ws/browser-compat", http.Header{"Origin": {"chrome-extension://" + testExtensionID}}, false, d.Token)
	if err != nil {
		t.Fatalf("allowed origin on compat path: %v", err)
	}
	if _, err := p.WaitFor(2*time.Second, bridgeproto.TypeStateSnapshot, nil); err != nil {
		t.Fatal(err)
	}
	p.Close()

	// Wrong token: one error frame saying why (never what was sent), then
	// a close frame with 4401; nothing else.
	p, _, err = dial("/ws/browser", nil, true, "")
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Send(bridgeproto.Hello{Type: "hello", Token: "wrong-SECRETV", ClientID: "intruder"})
	var ce *websocket.CloseError
	if err := p.WaitClosed(5 * time.Second); !errors.As(err, &ce) || ce.Code != 4401 {
		t.Fatalf("wrong token: close %v, want 4401", err)
	}
	if msgs := p.Messages(); len(msgs) != 1 || msgs[0].Type != bridgeproto.TypeError || !strings.Contains(string(msgs[0].Raw), bridgeproto.ErrPairingFailed) || strings.Contains(string(msgs[0].Raw), "SECRETV") {
		t.Fatalf("unpaired client received %v, want one pairing_failed error frame", msgs)
	}
	// First message not a hello: refused the same way.
	p, _, _ = dial("/ws/browser", nil, true, "")
	_ = p.Send(bridgeproto.Keepalive{Type: "keepalive"})
	if err := p.WaitClosed(5 * time.Second); !errors.As(err, &ce) || ce.Code != 4401 {
		t.Fatalf("no hello: close %v, want 4401", err)
	}

	// One bad message: an error frame, the connection stays.
	p = connectPlugin(t, d, "guard-1", nil)
	_ = p.SendRaw([]byte(`{"type":"credentials","platform":"platform_z","headers":{"a":"b"}}`))
	m, err := p.WaitFor(2*time.Second, bridgeproto.TypeError, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ef bridgeproto.Error
	_ = m.Decode(&ef)
	if ef.Code != "invalid_platform" || ef.RefType != "credentials" {
		t.Fatalf("error frame %+v", ef)
	}
	_ = p.Send(bridgeproto.Keepalive{Type: "keepalive"})
	time.Sleep(100 * time.Millisecond)
	if p.CloseErr() != nil {
		t.Fatalf("closed after one bad message: %v", p.CloseErr())
	}
	// A flood of garbage closes with 1008.
	for i := 0; i < 30; i++ {
		if p.SendRaw([]byte("garbage")) != nil {
			break
		}
	}
	if err := p.WaitClosed(5 * time.Second); !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
		t.Fatalf("flood: close %v, want 1008", err)
	}
	// A message over the cap closes with 1009.
	p = connectPlugin(t, d, "guard-2", nil)
	_ = p.SendRaw([]byte(`{"type":"keepalive","pad":"` + strings.Repeat("x", 70000) + `"}`))
	if err := p.WaitClosed(5 * time.Second); !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("oversized: close %v, want 1009", err)
	}
	// A newer connection with the same clientId replaces the older.
	a := connectPlugin(t, d, "dup", nil)
	connectPlugin(t, d, "dup", nil)
	if err := a.WaitClosed(5 * time.Second); !errors.As(err, &ce) || ce.Code != 4409 {
		t.Fatalf("replaced: close %v, want 4409", err)
	}
}

// state_snapshot arrives on connect and after every mode change, from the
// HTTP routes and from the plugin's own action_request, and its system part
// is exactly GET /v1/system/state.
func TestBrowserStateSnapshots(t *testing.T) {
	d := startBrowserDaemon(t)
	p := connectPlugin(t, d, "snap", nil)
	m, err := p.WaitFor(2*time.Second, bridgeproto.TypeStateSnapshot, nil)
	if err != nil {
		t.Fatal(err)
	}
	var snap struct {
		System  map[string]any `json:"system"`
		Browser struct {
			AutomationConversations []any `json:"automation_conversations"`
		} `json:"browser"`
	}
	_ = m.Decode(&snap)
	var state envelope[map[string]any]
	d.Do("GET", "/v1/system/state", nil).Decode(t, &state)
	if !reflect.DeepEqual(keys(snap.System), keys(state.Data)) || snap.System["mode"] != "running" || snap.Browser.AutomationConversations == nil {
		t.Fatalf("snapshot system %v, state %v", snap.System, state.Data)
	}

	resp := d.Do("POST", "/v1/system/pause", map[string]string{"requested_by": "e2e", "reason": "lunch"})
	if resp.Status != 200 {
		t.Fatalf("pause: %s", resp.Body)
	}
	m, err = p.WaitFor(3*time.Second, bridgeproto.TypeStateSnapshot, func(m fakeplugin.Msg) bool { return strings.Contains(string(m.Raw), `"mode":"paused"`) })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.Raw), `"reason":"lunch"`) {
		t.Fatalf("paused snapshot %s", m.Raw)
	}
	// The plugin resumes through action_request; it gets the answer and a snapshot.
	_ = p.Send(bridgeproto.ActionRequest{Type: "action_request", RequestID: "ar1", Action: "resume", Reason: "back"})
	m, err = p.WaitFor(3*time.Second, bridgeproto.TypeActionRequestResult, nil)
	if err != nil {
		t.Fatal(err)
	}
	var arr bridgeproto.ActionRequestResult
	_ = m.Decode(&arr)
	if !arr.OK || arr.RequestID != "ar1" || arr.System == nil || arr.System.Mode != "running" || arr.System.RequestedBy != "browser:snap" {
		t.Fatalf("action_request_result %s", m.Raw)
	}
	if _, err := p.WaitFor(3*time.Second, bridgeproto.TypeStateSnapshot, func(m fakeplugin.Msg) bool { return strings.Contains(string(m.Raw), `"reason":"back"`) }); err != nil {
		t.Fatal(err)
	}
	d.Do("POST", "/v1/system/drain", nil)
	if err := p.WaitCount(3*time.Second, bridgeproto.TypeStateSnapshot, 4); err != nil {
		t.Fatal(err)
	}
	d.Do("GET", "/v1/system/state", nil).Decode(t, &state)
	if state.Data["mode"] != "draining" {
		t.Fatalf("mode %v", state.Data["mode"])
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// Actions reach the plugin and come back as the SPEC's action result.
func TestBrowserActions(t *testing.T) {
	d := startBrowserDaemon(t)
	var silent = func(a bridgeproto.Action) *bridgeproto.ActionResult { return nil }
	p := connectPlugin(t, d, "act-1", nil)

	resp := d.Do("POST", "/v1/browser/actions", map[string]any{"action": "tab_open", "platform": "platform_a", "url": "https://chat.example/"})
	if resp.Status != 200 {
		t.Fatalf("tab_open: %d %s", resp.Status, resp.Body)
	}
	var out envelope[map[string]any]
	resp.Decode(t, &out)
	for _, f := range []string{"accepted", "completed", "failed", "reason", "target", "result", "shell_runtime"} {
		if _, ok := out.Data[f]; !ok {
			t.Fatalf("action result lacks %s: %s", f, resp.Body)
		}
	}
	if out.Data["accepted"] != true || out.Data["completed"] != true || out.Data["failed"] != false || out.Data["clientId"] != "act-1" {
		t.Fatalf("action result %s", resp.Body)
	}
	res := out.Data["result"].(map[string]any)
	if ack := res["results"].([]any)[0].(map[string]any)["delivery_ack"].(map[string]any); ack["status_code"] != float64(200) {
		t.Fatalf("delivery_ack %v", ack)
	}
	if res["options"].(map[string]any)["url"] != "https://chat.example/" {
		t.Fatalf("options not passed: %v", res)
	}
	// Every ws_reconnect alias lands on its canonical name.
	for _, body := range []map[string]any{
		{"action": "ws_reconnect", "delay_ms": 250, "repeat_count": 2, "interval_ms": 100},
		{"action": "ws_reconnect", "disconnectMs": 250, "repeatCount": 2, "repeatIntervalMs": 100},
		{"action": "ws_reconnect", "disconnect_ms": 250, "repeatCount": 2, "repeat_interval_ms": 100},
		{"action": "ws_reconnect", "delayMs": 250, "repeat_count": 2, "intervalMs": 100},
	} {
		resp := d.Do("POST", "/v1/browser/actions", body)
		if resp.Status != 200 {
			t.Fatalf("ws_reconnect %v: %s", body, resp.Body)
		}
		var o envelope[struct {
			Result struct {
				Options map[string]any `json:"options"`
			} `json:"result"`
		}]
		resp.Decode(t, &o)
		want := map[string]any{"disconnectMs": float64(250), "repeatCount": float64(2), "repeatIntervalMs": float64(100)}
		if !reflect.DeepEqual(o.Data.Result.Options, want) {
			t.Fatalf("ws_reconnect %v: plugin got %v", body, o.Data.Result.Options)
		}
	}
	wantError(t, d.Do("POST", "/v1/browser/actions", map[string]any{"action": "ws_reconnect", "delayMs": 1, "delay_ms": 2}), 422, "invalid_field")
	wantError(t, d.Do("POST", "/v1/browser/actions", map[string]any{"action": "plugin_status", "clientId": "ghost"}), 409, "unknown_client")

	// Legacy open and reload are tab_open and tab_reload on platform_a.
	for _, ra := range [][2]string{{"open", "tab_open"}, {"reload", "tab_reload"}} {
		route, action := ra[0], ra[1]
		resp := d.Do("POST", "/v1/browser/platform_a/"+route, nil)
		var o envelope[map[string]any]
		resp.Decode(t, &o)
		if resp.Status != 200 || o.Data["action"] != action || o.Data["platform"] != "platform_a" {
			t.Fatalf("legacy %s: %s", route, resp.Body)
		}
	}

	// The latest result is in the read model, globally and per client.
	rm := readModel(t, d, "")
	if rm.LastActionResult == nil || rm.LastActionResult["action"] != "tab_reload" || rm.ShellRuntime == nil {
		t.Fatalf("last_action_result %v shell_runtime %v", rm.LastActionResult, rm.ShellRuntime)
	}
	if len(rm.Clients) != 1 || rm.Clients[0].LastActionResult["client_id"] != "act-1" {
		t.Fatalf("clients %+v", rm.Clients)
	}

	// A plugin that never answers: 504 after the action timeout.
	connectPlugin(t, d, "act-silent", nil, func(o *fakeplugin.Options) { o.OnAction = silent })
	start := time.Now()
	wantError(t, d.Do("POST", "/v1/browser/actions", map[string]any{"action": "plugin_status", "clientId": "act-silent"}), 504, "action_timeout")
	if el := time.Since(start); el < time.Second || el > 5*time.Second {
		t.Fatalf("timeout after %s, want about 1.5 s", el)
	}
	_ = p
}

// Relayed requests: buffered, prompt mode, SSE, cancel, caller going away,
// the 409 for missing platform_a credentials, and the legacy routes.
func TestBrowserRequests(t *testing.T) {
	d := startBrowserDaemon(t)
	plat := fakeplugin.NewPlatform("not-a-secret-here")
	defer plat.Close()
	p := connectPlugin(t, d, "req-1", plat)

	// platform_a without captured credentials: 409 asking for a real request.
	resp := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_a", "prompt": "hi"})
	wantError(t, resp, 409, "no_credentials")
	if !strings.Contains(string(resp.Body), "complete one real request") {
		t.Fatalf("409 message: %s", resp.Body)
	}

	// platform_b path relay works without a capture (raw relay).
	resp = d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo", "method": "POST", "body": map[string]any{"q": 1}, "requestId": "b-1"})
	if resp.Status != 200 {
		t.Fatalf("buffered: %d %s", resp.Status, resp.Body)
	}
	var buf envelope[struct {
		RequestID string            `json:"requestId"`
		Status    int               `json:"status"`
		Headers   map[string]string `json:"headers"`
		Body      string            `json:"body"`
		ClientID  string            `json:"clientId"`
	}]
	resp.Decode(t, &buf)
	if buf.Data.RequestID != "b-1" || buf.Data.Status != 200 || buf.Data.ClientID != "req-1" || !strings.Contains(buf.Data.Body, `"body":"{\"q\":1}"`) {
		t.Fatalf("buffered answer %s", resp.Body)
	}
	if buf.Data.Headers["content-type"] != "application/json" || len(buf.Data.Headers) > 3 {
		t.Fatalf("headers not filtered to the safe set: %v", buf.Data.Headers)
	}
	// A generated requestId comes back.
	resp = d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_c", "path": "/api/echo"})
	resp.Decode(t, &buf)
	if resp.Status != 200 || !strings.HasPrefix(buf.Data.RequestID, "req_") {
		t.Fatalf("generated id: %s", resp.Body)
	}

	capture(t, d, p, "platform_a", "me@example", map[string]string{"Authorization": "Bearer x"})
	resp = d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_a", "prompt": "hello"})
	if resp.Status != 200 || !strings.Contains(string(resp.Body), `echo: hello`) {
		t.Fatalf("prompt mode: %d %s", resp.Status, resp.Body)
	}
	// Legacy send and current.
	resp = d.Do("POST", "/v1/browser/platform_a/send", map[string]any{"prompt": "legacy", "requestId": "legacy-1"})
	if resp.Status != 200 {
		t.Fatalf("legacy send: %s", resp.Body)
	}
	cur := d.Do("GET", "/v1/browser/platform_a/current", nil)
	if cur.Status != 200 || !strings.Contains(string(cur.Body), `"requestId":"legacy-1"`) || !strings.Contains(string(cur.Body), "echo: legacy") {
		t.Fatalf("current: %s", cur.Body)
	}

	// SSE: open, events with increasing seq, end.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	status, events, raw := postSSE(t, ctx, d.URL+"/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/stream?n=5", "responseMode": "sse"}, nil)
	if status != 200 || len(events) != 7 || events[0].Name != "stream_open" || events[6].Name != "stream_end" {
		t.Fatalf("sse: %d %d events\n%s", status, len(events), raw)
	}
	for i := 1; i <= 5; i++ {
		ev := events[i]
		if ev.Name != "stream_event" || ev.Data["seq"] != float64(i) || ev.Data["data"] != "chunk "+string(rune('0'+i)) {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	if strings.Contains(raw, "not-a-secret-here") {
		t.Fatal("SSE carried a platform session header")
	}
	// An upstream failure inside SSE ends in stream_error… a refused page request.
	status, events, raw = postSSE(t, ctx, d.URL+"/v1/browser/request", map[string]any{"platform": "platform_c", "path": "/api/stream", "responseMode": "sse", "clientId": "req-1", "timeoutMs": 300,
		"headers": map[string]string{"X-Test": "1"}}, nil)
	if status != 200 || events[len(events)-1].Name != "stream_end" {
		t.Fatalf("sse with headers: %s", raw)
	}

	// Cancel by id: the plugin hears request_cancel and the page request ends.
	done := make(chan []sseEvent, 1)
	go func() {
		_, evs, _ := postSSE(t, ctx, d.URL+"/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/hang", "responseMode": "sse", "requestId": "hang-1"}, nil)
		done <- evs
	}()
	waitUntil(t, 5*time.Second, "hang stream open", func() bool { return p.Count(bridgeproto.TypeAPIRequest) >= 7 && plat.Hits.Load() > 0 })
	time.Sleep(100 * time.Millisecond)
	wantError(t, d.Do("POST", "/v1/browser/request/cancel", map[string]any{"platform": "platform_a", "requestId": "hang-1"}), 404, "unknown_request")
	resp = d.Do("POST", "/v1/browser/request/cancel", map[string]any{"platform": "platform_b", "requestId": "hang-1"})
	if resp.Status != 200 || !strings.Contains(string(resp.Body), `"cancelled":true`) {
		t.Fatalf("cancel: %s", resp.Body)
	}
	select {
	case evs := <-done:
		if last := evs[len(evs)-1]; last.Name != "stream_error" || last.Data["code"] != "request_cancelled" {
			t.Fatalf("cancelled stream ended with %+v", last)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelled stream did not end")
	}
	waitUntil(t, 10*time.Second, "page request cancelled", func() bool { return plat.Cancelled.Load() >= 1 })
	if !contains(p.Cancels(), "hang-1") {
		t.Fatalf("plugin cancels %v", p.Cancels())
	}

	// The HTTP caller going away cancels too.
	cctx, ccancel := context.WithCancel(ctx)
	go func() {
		postSSE(t, cctx, d.URL+"/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/hang", "responseMode": "sse", "requestId": "hang-2"},
			func(ev sseEvent) bool { return ev.Name == "stream_event" })
		ccancel()
	}()
	waitUntil(t, 5*time.Second, "request_cancel after caller left", func() bool { return contains(p.Cancels(), "hang-2") })
	waitUntil(t, 10*time.Second, "second page request cancelled", func() bool { return plat.Cancelled.Load() >= 2 })

	// A plugin that never answers a buffered request: 504, and the plugin hears the cancel.
	m := connectPlugin(t, d, "req-manual", plat, func(o *fakeplugin.Options) { o.Manual = true })
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo", "clientId": "req-manual", "timeoutMs": 300, "requestId": "slow-1"}), 504, "relay_timeout")
	waitUntil(t, 10*time.Second, "cancel after timeout", func() bool { return contains(m.Cancels(), "slow-1") })
	// Unknown client pinned: 409.
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo", "clientId": "ghost"}), 409, "unknown_client")

	// Many requests at once through one plugin all come back right.
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		go func(i int) {
			id := "par-" + string(rune('a'+i))
			r := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo", "requestId": id, "clientId": "req-1"})
			if r.Status != 200 || !strings.Contains(string(r.Body), `"requestId":"`+id+`"`) {
				errs <- errors.New(string(r.Body))
				return
			}
			errs <- nil
		}(i)
	}
	for i := 0; i < 20; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// A buffered request the page cannot perform: 502 (and it counts as a
	// failure for the relay policy, so it goes last).
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo", "clientId": "req-1", "method": "POST", "body": "x", "headers": map[string]string{"bad header": "x"}}), 502, "relay_failed")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Several plugins and accounts, disconnect and reconnect, restart: records
// merge live and persisted views and survive.
func TestBrowserRecordsManyClientsReconnectRestart(t *testing.T) {
	d := startBrowserDaemon(t, "SVC_BROWSER_STALE_AFTER_MS=60000")
	a := connectPlugin(t, d, "chrome-1", nil)
	b := connectPlugin(t, d, "firefox-1", nil, func(o *fakeplugin.Options) { o.Browser = "firefox" })
	capture(t, d, a, "platform_a", "alice", map[string]string{"Authorization": "Bearer a"})
	capture(t, d, a, "platform_b", "alice", map[string]string{"Cookie": "x"})
	capture(t, d, b, "platform_a", "bob", map[string]string{"Authorization": "Bearer b"})
	connectPlugin(t, d, "idle-1", nil)

	rm := readModel(t, d, "")
	byKey := map[string]recordView{}
	for _, r := range rm.Records {
		byKey[r.ClientID+"/"+r.Platform] = r
	}
	if len(rm.Records) != 4 || byKey["idle-1/"].View != "active_only" || byKey["chrome-1/platform_a"].View != "active_and_persisted" || byKey["chrome-1/platform_a"].Status != "fresh" {
		t.Fatalf("records %+v", rm.Records)
	}
	ra := byKey["chrome-1/platform_a"]
	if ra.Account != "alice" || ra.Host != "chat.example" || ra.HeaderCount != 1 || ra.HeaderNames[0] != "authorization" || !strings.HasPrefix(ra.CredentialFingerprint, "sha256:") ||
		ra.EndpointMetadata["count"] != float64(2) || ra.Endpoints[0]["path"] != "/api/complete" || ra.Timestamps["credentials_at"] == "" {
		t.Fatalf("record %+v", ra)
	}
	if byKey["chrome-1/platform_a"].CredentialFingerprint == byKey["firefox-1/platform_a"].CredentialFingerprint {
		t.Fatal("different logins share a fingerprint")
	}
	// Filters.
	for q, n := range map[string]int{"?platform=platform_a": 2, "?account=bob": 1, "?browser=firefox": 1, "?client_id=chrome-1": 2, "?host=chat.example": 3, "?status=fresh": 4, "?status=lost": 0, "?platform=platform_a&account=alice": 1} {
		if got := len(readModel(t, d, q).Records); got != n {
			t.Fatalf("filter %s: %d records, want %d", q, got, n)
		}
	}

	// Disconnect: persisted_only and stale, still readable.
	b.Close()
	waitUntil(t, 5*time.Second, "firefox record persisted_only", func() bool {
		r := readModel(t, d, "?client_id=firefox-1").Records
		return len(r) == 1 && r[0].View == "persisted_only" && r[0].Status == "stale"
	})
	waitUntil(t, 5*time.Second, "stale sweep recorded", func() bool {
		return readModel(t, d, "").Policy.Targets[byKey["firefox-1/platform_a"].Key].StaleSweepCount >= 1
	})
	// Reconnect with the same clientId: the records are taken back.
	connectPlugin(t, d, "firefox-1", nil, func(o *fakeplugin.Options) { o.Browser = "firefox" })
	waitUntil(t, 5*time.Second, "firefox record back", func() bool {
		r := readModel(t, d, "?client_id=firefox-1").Records
		return len(r) == 1 && r[0].View == "active_and_persisted" && r[0].Status == "fresh" && r[0].CredentialFingerprint == byKey["firefox-1/platform_a"].CredentialFingerprint
	})
	// And a reconnecting plugin's persisted credentials count for platform_a.
	plat := fakeplugin.NewPlatform("s")
	defer plat.Close()

	// Restart: every record is persisted_only and keeps its metadata.
	d.Restart()
	rm = readModel(t, d, "")
	if len(rm.Records) != 3 {
		t.Fatalf("after restart %d records: %+v", len(rm.Records), rm.Records)
	}
	for _, r := range rm.Records {
		if r.View != "persisted_only" || r.Status != "stale" || r.CredentialFingerprint == "" || len(r.Endpoints) != 2 {
			t.Fatalf("after restart record %+v", r)
		}
	}
	if rm.LastActionResult != nil {
		t.Fatalf("unexpected action result %v", rm.LastActionResult)
	}
	// The reconnecting plugin can relay to platform_a with its persisted capture.
	connectPlugin(t, d, "chrome-1", plat)
	resp := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_a", "prompt": "after restart"})
	if resp.Status != 200 || !strings.Contains(string(resp.Body), "after restart") {
		t.Fatalf("relay after restart: %d %s", resp.Status, resp.Body)
	}
}

// The relay policy: backoff on 5xx and 429 honouring Retry-After, the
// breaker, 429 refusals with retry_after_ms, persistence across restart.
func TestBrowserRelayPolicy(t *testing.T) {
	d := startBrowserDaemon(t, "SVC_RELAY_BACKOFF_BASE_MS=300", "SVC_RELAY_BREAKER_FAILURES=3", "SVC_RELAY_BREAKER_OPEN_MS=600000", "SVC_RELAY_WINDOW_MAX=1000")
	plat := fakeplugin.NewPlatform("s")
	defer plat.Close()
	connectPlugin(t, d, "pol-1", plat)
	req := func(path string) *harness.Response {
		return d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": path})
	}
	// A 503 passes through (the caller sees the platform's status) and starts a backoff.
	r := req("/api/status?code=503")
	if r.Status != 200 || !strings.Contains(string(r.Body), `"status":503`) {
		t.Fatalf("503 relay: %d %s", r.Status, r.Body)
	}
	r = req("/api/echo")
	wantError(t, r, 429, "relay_refused")
	var env envelope[any]
	var details struct {
		Error struct {
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &details)
	if ms := details.Error.Details["retry_after_ms"].(float64); ms <= 0 || ms > 300 || details.Error.Details["reason"] != "backoff" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("refusal details %v", details.Error.Details)
	}
	_ = env
	time.Sleep(350 * time.Millisecond)
	// 429 with Retry-After: 7 s wins over the exponential guess.
	r = req("/api/status?code=429&retry_after=7")
	if r.Status != 200 {
		t.Fatalf("429 relay: %s", r.Body)
	}
	r = req("/api/echo")
	_ = json.Unmarshal(r.Body, &details)
	if r.Status != 429 || details.Error.Details["retry_after_ms"].(float64) < 6000 {
		t.Fatalf("Retry-After not honoured: %d %s", r.Status, r.Body)
	}
	// Restart: the backoff is still there and still refuses.
	rm := readModel(t, d, "")
	var key string
	for k, tg := range rm.Policy.Targets {
		if tg.Relay != nil && tg.Relay["backoff_level"] == float64(2) {
			key = k
		}
	}
	if key == "" {
		t.Fatalf("no target with backoff_level 2: %+v", rm.Policy.Targets)
	}
	// State changes are flushed through raft at once but asynchronously;
	// Restart is a SIGKILL, so give the flush (interval 200 ms) its turn.
	time.Sleep(600 * time.Millisecond)
	d.Restart()
	rm = readModel(t, d, "")
	tg := rm.Policy.Targets[key]
	if tg.Relay == nil || tg.Relay["backoff_level"] != float64(2) || tg.Relay["breaker"] != "closed" || tg.InFlight != 0 || tg.Waiting != 0 {
		t.Fatalf("relay state after restart: %+v", tg)
	}
	connectPlugin(t, d, "pol-1", plat)
	r = req("/api/echo")
	_ = json.Unmarshal(r.Body, &details)
	if r.Status != 429 || details.Error.Details["reason"] != "backoff" {
		t.Fatalf("backoff lost across restart: %d %s", r.Status, r.Body)
	}
}

// TestWebSocketUpgradeIsCountedAs101: metrics and access logs see the
// upgrade's real status, not a 200 nobody sent.
func TestWebSocketUpgradeIsCountedAs101(t *testing.T) {
	d := startBrowserDaemon(t)
	p := connectPlugin(t, d, "metrics-client", nil)
	defer p.Close()
	m := d.Do("GET", "/metrics", nil)
	if !strings.Contains(string(m.Body), `svcd_http_requests_total{code="101",route="GET /ws/browser"} 1`) {
		t.Fatalf("/metrics does not count the upgrade as 101:\n%s", grepLines(string(m.Body), "ws/browser"))
	}
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
