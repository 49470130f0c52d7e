package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// plugins keeps fake plugins paired with whichever node leads: each one
// redials (the standby refuses with 503) whenever its socket closes, as the
// extension does. One remembers delivery keys (Dedup), one does not.
type plugins struct {
	r        *rig
	platform *fakeplugin.Platform
	mu       sync.Mutex
	live     map[string]*fakeplugin.Plugin
	dedup    map[string]*fakeplugin.Delivered
	dials    map[string]int
	injects  map[string][]injectSeen // delivery key → what the plugin typed
}

// injectSeen is one conversation_inject a plugin typed (answered ok, not
// as a duplicate), with the time, for the renewal checker.
type injectSeen struct {
	Client string
	At     time.Time
	Kind   string
}

func startPlugins(ctx context.Context, r *rig) *plugins {
	ps := &plugins{r: r, platform: fakeplugin.NewPlatform("chaos-platform-secret"), live: map[string]*fakeplugin.Plugin{},
		dedup: map[string]*fakeplugin.Delivered{"chaos-dedup": fakeplugin.NewDelivered(), "chaos-plain": nil}, dials: map[string]int{},
		injects: map[string][]injectSeen{}}
	r.t.Cleanup(ps.platform.Close)
	for id := range ps.dedup {
		go ps.keep(ctx, id)
	}
	return ps
}

// keep dials the leader as clientID until ctx ends, and again whenever the
// connection closes.
func (ps *plugins) keep(ctx context.Context, clientID string) {
	base := ps.platform.URL
	for k := 0; ctx.Err() == nil; k++ {
		n := ps.r.nodes[k%len(ps.r.nodes)]
		o := fakeplugin.Options{URL: "ws" + strings.TrimPrefix(n.url, "http") + "/ws/browser", Token: harness.ClusterToken, ClientID: clientID,
			Platforms: map[string]string{bridgeproto.PlatformA: base, bridgeproto.PlatformB: base, bridgeproto.PlatformC: base},
			Dedup:     ps.dedup[clientID]}
		o.OnInject = func(in bridgeproto.ConversationInject) *bridgeproto.InjectResult {
			ps.mu.Lock()
			ps.injects[in.DeliveryKey] = append(ps.injects[in.DeliveryKey], injectSeen{Client: clientID, At: time.Now(), Kind: in.Kind})
			ps.mu.Unlock()
			return &bridgeproto.InjectResult{OK: true, DeliveryAck: &bridgeproto.DeliveryAck{Level: 1, StatusCode: 200}}
		}
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		dial := &Op{ID: ps.r.hist.NewID("pd"), Kind: "plugin_dial", Node: n.name, Start: time.Now(), Outcome: "info", Detail: map[string]any{"client": clientID}}
		p, resp, err := fakeplugin.Dial(dctx, o)
		cancel()
		dial.End = time.Now()
		if resp != nil {
			dial.Status = resp.StatusCode
		}
		if err != nil {
			dial.Err = truncate(err.Error(), 200)
		}
		ps.r.hist.Add(dial)
		if err != nil {
			pause(ctx, 100*time.Millisecond)
			continue
		}
		_ = p.Send(bridgeproto.Credentials{Type: bridgeproto.TypeCredentials, Platform: bridgeproto.PlatformB, Account: "chaos", Host: "chat.example",
			Headers: map[string]string{"Authorization": "Bearer page"}, Cookies: map[string]string{"sid": "cookie-value"}})
		link(p, clientID)
		ps.mu.Lock()
		ps.live[clientID] = p
		ps.dials[clientID]++
		ps.mu.Unlock()
		for p.CloseErr() == nil && pause(ctx, 50*time.Millisecond) {
		}
		p.Close()
		ps.mu.Lock()
		delete(ps.live, clientID)
		ps.mu.Unlock()
	}
}

// disconnect closes a random live plugin's socket (mid-request when relays
// are in flight, mid-delivery when an injection is): it redials.
func (ps *plugins) disconnect(rnd *rand.Rand) (string, string, error) {
	ps.mu.Lock()
	var ids []string
	for id := range ps.live {
		ids = append(ids, id)
	}
	sortStrings(ids)
	if len(ids) == 0 {
		ps.mu.Unlock()
		return "", "", fmt.Errorf("no plugin connected")
	}
	id := ids[rnd.Intn(len(ids))]
	p := ps.live[id]
	ps.mu.Unlock()
	p.Close()
	return "plugin/" + id, "", nil
}

// stalled pairs a plugin that then stops reading its socket for a while: the
// daemon's writes to it pile up in the kernel buffers, and must not hold up
// the other clients or the relays sent to them.
func (ps *plugins) stalled(rnd *rand.Rand) (string, string, error) {
	l, err := ps.r.byRole("leader")
	if err != nil {
		return "", "", err
	}
	ws, _, err := (&websocket.Dialer{HandshakeTimeout: 3 * time.Second}).Dial("ws"+strings.TrimPrefix(l.url, "http")+"/ws/browser", nil)
	if err != nil {
		return "", "", err
	}
	defer ws.Close()
	hello, _ := json.Marshal(bridgeproto.Hello{Type: bridgeproto.TypeHello, Token: harness.ClusterToken, ClientID: "chaos-stalled", Browser: "chrome", ExtensionVersion: "0.0.1-chaos"})
	if err := ws.WriteMessage(websocket.TextMessage, hello); err != nil {
		return "", "", err
	}
	_ = ws.WriteMessage(websocket.TextMessage, mustJSON(bridgeproto.Credentials{Type: bridgeproto.TypeCredentials, Platform: bridgeproto.PlatformB, Account: "chaos", Host: "chat.example",
		Headers: map[string]string{"Authorization": "Bearer page"}, Cookies: map[string]string{"sid": "cookie-value"}}))
	d := time.Duration(1000+rnd.Intn(4000)) * time.Millisecond
	time.Sleep(d) // reads nothing: not hello_ok, not api_request, not pings
	return "plugin/chaos-stalled@" + l.name, d.String(), nil
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// relayer sends buffered and SSE relays through its node (a standby
// forwards), cancels some streams by id and walks away from others.
func relayer(ctx context.Context, r *rig, n *node, rnd *rand.Rand) {
	for pause(ctx, time.Duration(30+rnd.Intn(150))*time.Millisecond) {
		if rnd.Intn(2) == 0 {
			relayBuffered(r, n, rnd)
		} else {
			relaySSE(r, n, rnd)
		}
	}
}

func relayBuffered(r *rig, n *node, rnd *rand.Rand) {
	op := &Op{ID: r.hist.NewID("rb"), Kind: "relay_buffered", Node: n.name, Start: time.Now()}
	body := map[string]any{"platform": bridgeproto.PlatformB, "path": "/api/echo", "method": "POST", "responseMode": "buffered",
		"requestId": op.ID, "timeoutMs": 3000, "body": map[string]string{"caller": op.ID}}
	a := r.call(context.Background(), n, "POST", "/v1/browser/request", body, 15*time.Second)
	if a.err == nil && a.status == 200 {
		var env struct {
			Data struct {
				Body      string `json:"body"`
				RequestID string `json:"requestId"`
				Status    int    `json:"status"`
			} `json:"data"`
		}
		if err := json.Unmarshal(a.body, &env); err != nil {
			op.Detail = map[string]any{"wrong": "buffered answer is not JSON"}
		} else if env.Data.RequestID != op.ID || !strings.Contains(env.Data.Body, op.ID) {
			op.Detail = map[string]any{"wrong": fmt.Sprintf("answer for %s carries requestId %q and body %s", op.ID, env.Data.RequestID, truncate(env.Data.Body, 120))}
		}
	}
	r.record(op, a)
}

// relaySSE reads one stream to its end, checking that every event is this
// caller's, in order, and that exactly one terminal event ends it.
func relaySSE(r *rig, n *node, rnd *rand.Rand) {
	op := &Op{ID: r.hist.NewID("rs"), Kind: "relay_sse", Node: n.name, Start: time.Now(), Detail: map[string]any{}}
	events := 3 + rnd.Intn(20)
	action, at := "read", 0
	switch x := rnd.Intn(10); {
	case x < 3:
		action, at = "cancel", 1+rnd.Intn(events)
	case x < 4:
		action, at = "leave", 1+rnd.Intn(events)
	}
	op.Detail["action"] = action
	body := map[string]any{"platform": bridgeproto.PlatformB, "path": fmt.Sprintf("/api/stream?n=%d&delay_ms=%d&tag=%s", events, 10+rnd.Intn(40), op.ID),
		"method": "GET", "responseMode": "sse", "requestId": op.ID, "timeoutMs": 5000}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", n.url+"/v1/browser/request", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		r.record(op, answer{err: err})
		return
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		r.record(op, answer{status: resp.StatusCode, body: buf.Bytes()})
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var name string
	var seq int64
	seen, terminals := 0, 0
	var last string
	wrong := func(format string, args ...any) {
		if _, ok := op.Detail["wrong"]; !ok {
			op.Detail["wrong"] = fmt.Sprintf(format, args...)
		}
	}
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			name = v
			continue
		}
		v, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			RequestID string `json:"requestId"`
			Seq       int64  `json:"seq"`
			Data      string `json:"data"`
			Code      string `json:"code"`
		}
		if err := json.Unmarshal([]byte(v), &ev); err != nil {
			wrong("bad SSE data %q", truncate(v, 100))
			continue
		}
		if terminals > 0 {
			wrong("event %s after the stream ended with %s", name, last)
		}
		if ev.RequestID != "" && ev.RequestID != op.ID {
			wrong("event %s for request %q on %s's stream", name, ev.RequestID, op.ID)
		}
		switch name {
		case "stream_event":
			seen++
			if ev.Seq <= seq {
				wrong("seq %d after %d", ev.Seq, seq)
			}
			seq = ev.Seq
			if !strings.HasSuffix(ev.Data, " "+op.ID) {
				wrong("chunk %q is not this caller's", truncate(ev.Data, 80))
			}
			if seen == at {
				if action == "leave" {
					cancel()
				} else if action == "cancel" {
					c := &Op{ID: r.hist.NewID("rc"), Kind: "relay_cancel", Node: n.name, Start: time.Now(), Detail: map[string]any{"of": op.ID}}
					r.record(c, r.call(context.Background(), n, "POST", "/v1/browser/request/cancel", map[string]string{"platform": bridgeproto.PlatformB, "requestId": op.ID}, 5*time.Second))
				}
			}
		case "stream_end", "stream_error":
			terminals++
			last = name
			if name == "stream_error" {
				op.Code = ev.Code
			}
		}
	}
	op.End = time.Now()
	op.Status = resp.StatusCode
	op.Detail["events"], op.Detail["terminal"] = seen, last
	switch {
	case action == "leave" && seen >= at:
		op.Outcome = "ok" // the caller walked away: nothing more is owed
	case terminals > 1:
		wrong("stream ended %d times", terminals)
		op.Outcome = "failed"
	case terminals == 0:
		op.Outcome, op.Err = "ambiguous", "stream cut without stream_end or stream_error"
	case last == "stream_end":
		op.Outcome = "ok"
		if seen != events && action == "read" {
			wrong("stream_end after %d of %d chunks", seen, events)
		}
	default:
		op.Outcome = "failed" // stream_error: its code is checked like any failure's
	}
	r.hist.Add(op)
}
