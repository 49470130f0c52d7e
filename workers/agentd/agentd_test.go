package agentd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/workers/agentd"
	"github.com/svcd/svcd/workers/agentd/codextest"
	"github.com/svcd/svcd/workers/agentd/fakemodel"
)

const token = "test-token-agentd"

type rig struct {
	t      *testing.T
	fm     *fakemodel.Server
	d      *agentd.Daemon
	base   string
	cancel context.CancelFunc
	served chan struct{}
	cfg    agentd.Config
}

func newRig(t *testing.T) *rig { return newRigWith(t, nil) }

// newRigWith lets a test adjust the config (and the Codex home) before start.
func newRigWith(t *testing.T, adjust func(cfg *agentd.Config)) *rig {
	t.Helper()
	bin := codextest.Bin(t)
	// agentd runs in this process and its Codex child inherits our
	// environment: HOME as codextest.ShellHomeEnv says why.
	home := codextest.ShellHomeEnv(t)
	t.Setenv("HOME", home[len("HOME="):])
	fm := fakemodel.New()
	if err := fm.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fm.Close() })
	r := &rig{t: t, fm: fm, cfg: agentd.Config{
		DataDir: t.TempDir(), Command: []string{bin, "app-server"}, CodexHome: codextest.Home(t, fm.BaseURL()),
		Token: token, RestartMin: 50 * time.Millisecond, RestartMax: 200 * time.Millisecond,
	}}
	if adjust != nil {
		adjust(&r.cfg)
	}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *rig) start() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.t.Fatal(err)
	}
	r.cfg.Listen = ln.Addr().String()
	d, err := agentd.New(r.cfg, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.d, r.cancel, r.base, r.served = d, cancel, "http://"+ln.Addr().String(), make(chan struct{})
	go func() { _ = d.ServeListener(ctx, ln); close(r.served) }()
	r.waitChild("running")
}

func (r *rig) stop() {
	if r.d == nil {
		return
	}
	r.cancel()
	<-r.served
	r.d.Close()
	r.d = nil
}

func (r *rig) waitChild(state string) map[string]any {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := r.do("GET", "/v1/agentd/status", nil, false)
		child, _ := body["data"].(map[string]any)["child"].(map[string]any)
		if child["state"] == state {
			return child
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("child never became %s: %v", state, child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *rig) do(method, path string, body any, auth bool) (int, map[string]any) {
	r.t.Helper()
	var rd io.Reader
	if s, ok := body.(string); ok {
		rd = strings.NewReader(s)
	} else if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, r.base+path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (r *rig) create() string {
	r.t.Helper()
	code, body := r.do("POST", "/v1/agentd/sessions", map[string]any{"cwd": r.t.TempDir(), "purpose": "test"}, true)
	if code != 200 {
		r.t.Fatalf("create: %d %v", code, body)
	}
	return session(body)["sessionId"].(string)
}

func session(body map[string]any) map[string]any {
	return body["data"].(map[string]any)["session"].(map[string]any)
}

func (r *rig) turn(id, input string, waitMS int) (int, map[string]any) {
	r.t.Helper()
	req := map[string]any{"sessionId": id, "input": input}
	if waitMS > 0 {
		req["waitMs"] = waitMS
	}
	return r.do("POST", "/v1/agentd/turn", req, true)
}

func (r *rig) waitTurn(id string) map[string]any {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := r.do("GET", "/v1/agentd/sessions/"+id, nil, false)
		s := session(body)
		if s["status"] == "idle" {
			return s
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("turn never finished: %v", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *rig) dial(auth bool) *websocket.Conn {
	h := http.Header{}
	if auth {
		h.Set("Authorization", "Bearer "+token)
	}
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(r.base, "http")+"/v1/agentd/events", h)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	return c
}

// TestSessionTurnStreamsInOrder creates a session, runs a turn on the real
// codex app-server and checks the deltas arrive on the WebSocket in order,
// the text lands in lastTurnOutput, and waitMs returns the final text.
func TestSessionTurnStreamsInOrder(t *testing.T) {
	r := newRig(t)
	id := r.create()
	ws := r.dial(false)
	if err := ws.WriteJSON(map[string]any{"type": "subscribe", "sessionId": id}); err != nil {
		t.Fatal(err)
	}
	want := "one two three four five six seven eight"
	r.fm.Push(fakemodel.Reply{Text: want, Chunks: 8})
	code, body := r.turn(id, "count", 0)
	if code != 200 {
		t.Fatalf("turn: %d %v", code, body)
	}
	turnID := body["data"].(map[string]any)["turn"].(map[string]any)["id"].(string)
	if turnID == "" {
		t.Fatal("no turn id")
	}
	var got strings.Builder
	var deltas int
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var e map[string]any
		if err := ws.ReadJSON(&e); err != nil {
			t.Fatalf("event stream: %v (so far %q)", err, got.String())
		}
		if e["type"] == "item/agentMessage/delta" {
			got.WriteString(e["delta"].(string))
			deltas++
		}
		if e["type"] == "turn/completed" {
			break
		}
	}
	if got.String() != want || deltas < 2 {
		t.Fatalf("stream gave %q in %d deltas, want %q", got.String(), deltas, want)
	}
	s := r.waitTurn(id)
	if s["lastTurnOutput"] != want || s["lastTurnStatus"] != "completed" || s["lastTurnId"] != turnID || s["lastTurnInput"] != "count" {
		t.Fatalf("read-back: %v", s)
	}
	r.fm.Push(fakemodel.Reply{Text: "waited answer"})
	code, body = r.turn(id, "again", 20000)
	if s := session(body); code != 200 || s["lastTurnOutput"] != "waited answer" || s["lastTurnStatus"] != "completed" {
		t.Fatalf("turn with waitMs: %d %v", code, body)
	}
	code, body = r.do("GET", "/v1/agentd/sessions", nil, false)
	if code != 200 || len(body["data"].(map[string]any)["sessions"].([]any)) != 1 {
		t.Fatalf("list: %d %v", code, body)
	}
}

// TestBadRequests: bad bodies, missing token, unknown sessions and routes get
// clear JSON errors and change nothing.
func TestBadRequests(t *testing.T) {
	r := newRig(t)
	id := r.create()
	cases := []struct {
		method, path string
		body         any
		auth         bool
		status       int
		code         string
	}{
		{"POST", "/v1/agentd/sessions", map[string]any{"cwd": "/tmp"}, false, 401, "unauthorized"},
		{"POST", "/v1/agentd/sessions", `{"cwd":`, true, 400, "malformed_json"},
		{"POST", "/v1/agentd/sessions", map[string]any{"purpose": "x"}, true, 422, "missing_field"},
		{"POST", "/v1/agentd/sessions", map[string]any{"cwd": "/tmp", "bogus": 1}, true, 422, "unknown_field"},
		{"POST", "/v1/agentd/sessions", map[string]any{"sessionId": "ses_nope"}, true, 404, "unknown_session"},
		{"POST", "/v1/agentd/turn", map[string]any{"sessionId": "ses_nope", "input": "x"}, true, 404, "unknown_session"},
		{"POST", "/v1/agentd/turn", map[string]any{"sessionId": id}, true, 422, "missing_field"},
		{"POST", "/v1/agentd/turn", map[string]any{"sessionId": id, "input": 5}, true, 422, "invalid_field"},
		{"GET", "/v1/agentd/sessions/ses_nope", nil, false, 404, "unknown_session"},
		{"POST", "/v1/agentd/run", map[string]any{}, true, 404, "not_found"},
		{"DELETE", "/v1/agentd/sessions", nil, true, 405, "method_not_allowed"},
	}
	for _, c := range cases {
		code, body := r.do(c.method, c.path, c.body, c.auth)
		e, _ := body["error"].(map[string]any)
		if code != c.status || e["code"] != c.code || body["ok"] != false {
			t.Errorf("%s %s %v: got %d %v, want %d %s", c.method, c.path, c.body, code, body, c.status, c.code)
		}
	}
	// Two Authorization headers are refused, not first-wins (the main
	// daemon's rule, one check for both: guard.Bearer).
	dup, _ := http.NewRequest("POST", r.base+"/v1/agentd/sessions", strings.NewReader(`{"cwd":"/tmp"}`))
	dup.Header.Set("Content-Type", "application/json")
	dup.Header.Add("Authorization", "Bearer "+token)
	dup.Header.Add("Authorization", "Bearer someone-else")
	if resp, err := http.DefaultClient.Do(dup); err != nil {
		t.Fatal(err)
	} else {
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if e, _ := body["error"].(map[string]any); resp.StatusCode != 400 || e["code"] != "duplicate_authorization" {
			t.Errorf("two Authorization headers: %d %v", resp.StatusCode, body)
		}
	}
	// A foreign Host is refused (DNS rebinding guard shared with the main daemon).
	req, _ := http.NewRequest("GET", r.base+"/v1/agentd/status", nil)
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("foreign Host: %d", resp.StatusCode)
	}
	if _, body := r.do("GET", "/v1/agentd/sessions", nil, false); len(body["data"].(map[string]any)["sessions"].([]any)) != 1 {
		t.Errorf("bad requests changed the sessions: %v", body)
	}
}

// TestRestartKeepsSessions: agentd stops and starts on the same data dir; the
// session is still there, resumes its Codex thread and runs a turn.
func TestRestartKeepsSessions(t *testing.T) {
	r := newRig(t)
	id := r.create()
	r.fm.Push(fakemodel.Reply{Text: "first"})
	if code, body := r.turn(id, "one", 20000); code != 200 || session(body)["lastTurnOutput"] != "first" {
		t.Fatalf("first turn: %d %v", code, body)
	}
	_, before := r.do("GET", "/v1/agentd/sessions/"+id, nil, false)
	thread := session(before)["threadId"]
	r.stop()
	r.start()
	code, body := r.do("POST", "/v1/agentd/sessions", map[string]any{"sessionId": id}, true)
	if code != 200 || body["data"].(map[string]any)["resumed"] != true || session(body)["threadId"] != thread {
		t.Fatalf("resume after restart: %d %v (thread was %v)", code, body, thread)
	}
	r.fm.Push(fakemodel.Reply{Text: "second"})
	if code, body := r.turn(id, "two", 20000); code != 200 || session(body)["lastTurnOutput"] != "second" || session(body)["threadId"] != thread {
		t.Fatalf("turn after restart: %d %v", code, body)
	}
}

// TestChildKilledMidTurn: the Codex child dies during a turn; the turn fails
// with a clear error, agentd restarts the child, and the next turn works.
func TestChildKilledMidTurn(t *testing.T) {
	r := newRig(t)
	id := r.create()
	r.fm.Push(fakemodel.Reply{Text: "a slow answer that never finishes", Chunks: 10, ChunkDelayMS: 500})
	if code, body := r.turn(id, "slow", 0); code != 200 {
		t.Fatalf("turn: %d %v", code, body)
	}
	child := r.waitChild("running")
	pid := int(child["pid"].(float64))
	for r.fm.Requests() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil { // the child's process group: launcher and native binary
		t.Fatal(err)
	}
	s := r.waitTurn(id)
	if s["lastTurnStatus"] != "failed" || !strings.Contains(s["lastTurnError"].(string), "child exited") {
		t.Fatalf("killed turn: %v", s)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := r.waitChild("running")
		if int(c["pid"].(float64)) != pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("child not restarted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.fm.Push(fakemodel.Reply{Text: "back again"})
	if code, body := r.turn(id, "next", 20000); code != 200 || session(body)["lastTurnOutput"] != "back again" {
		t.Fatalf("turn after child restart: %d %v", code, body)
	}
}

// TestModelErrorFailsTurn: the model server answers an error; the turn fails
// carrying its message.
func TestModelErrorFailsTurn(t *testing.T) {
	r := newRig(t)
	id := r.create()
	r.fm.Push(fakemodel.Reply{ErrorStatus: 400, ErrorMessage: "the fake model refuses this prompt"})
	code, body := r.turn(id, "refuse me", 20000)
	s := session(body)
	if code != 200 || s["lastTurnStatus"] != "failed" || !strings.Contains(s["lastTurnError"].(string), "the fake model refuses this prompt") {
		t.Fatalf("model error: %d %v", code, body)
	}
}

// TestInterruptOverWebSocket: an interrupt sent on the event WebSocket stops
// a running turn; without the token it is refused.
func TestInterruptOverWebSocket(t *testing.T) {
	r := newRig(t)
	id := r.create()
	r.fm.Push(fakemodel.Reply{Text: "a long answer to be interrupted", Chunks: 10, ChunkDelayMS: 400})
	if code, body := r.turn(id, "long", 0); code != 200 {
		t.Fatalf("turn: %d %v", code, body)
	}
	for r.fm.Requests() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	anon := r.dial(false)
	_ = anon.WriteJSON(map[string]any{"type": "interrupt", "sessionId": id})
	var m map[string]any
	_ = anon.SetReadDeadline(time.Now().Add(10 * time.Second))
	for m["error"] == nil {
		m = nil
		if err := anon.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
	}
	if m["error"].(map[string]any)["code"] != "unauthorized" {
		t.Fatalf("anonymous interrupt: %v", m)
	}
	ws := r.dial(true)
	_ = ws.WriteJSON(map[string]any{"type": "interrupt", "sessionId": id})
	s := r.waitTurn(id)
	if s["lastTurnStatus"] != "interrupted" {
		t.Fatalf("interrupted turn: %v", s)
	}
	r.fm.Push(fakemodel.Reply{Text: "after interrupt"})
	if code, body := r.turn(id, "next", 20000); code != 200 || session(body)["lastTurnOutput"] != "after interrupt" {
		t.Fatalf("turn after interrupt: %d %v", code, body)
	}
}

// TestChildMissing: with no codex binary agentd still serves, says so, and a
// turn fails with a clear 503.
func TestChildMissing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d, err := agentd.New(agentd.Config{Listen: ln.Addr().String(), DataDir: t.TempDir(), Token: token,
		Command: []string{"/nonexistent/codex", "app-server"}, RestartMin: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.ServeListener(ctx, ln); close(done) }()
	defer func() { cancel(); <-done; d.Close() }()
	r := &rig{t: t, d: d, base: "http://" + ln.Addr().String()}
	// Not installed is its own state, with what was looked for and how to
	// install it, and not a crash loop: no restarts are counted.
	child := r.waitChild("missing")
	if child["looked_for"] != "/nonexistent/codex" || !strings.Contains(child["install"].(string), "npm install -g @openai/codex@") {
		t.Fatalf("status does not say what is missing and how to install it: %v", child)
	}
	time.Sleep(300 * time.Millisecond)
	if again := r.waitChild("missing"); again["restarts"] != float64(0) || again["since"] != child["since"] {
		t.Fatalf("a missing child is being restarted: %v", again)
	}
	code, body := r.do("POST", "/v1/agentd/sessions", map[string]any{"cwd": t.TempDir()}, true)
	if code != 503 || body["error"].(map[string]any)["code"] != "agent_child_unavailable" {
		t.Fatalf("create without child: %d %v", code, body)
	}
	_, desc := r.do("GET", "/describe", nil, false)
	for _, k := range []string{"ok", "name", "surface", "description", "mode", "base_url", "event_stream", "routes", "capabilities", "notes"} {
		if _, ok := desc[k]; !ok {
			t.Errorf("describe lacks %q", k)
		}
	}
	if desc["mode"] != "app-server" {
		t.Errorf("mode %v", desc["mode"])
	}
}
