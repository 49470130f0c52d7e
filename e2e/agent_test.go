package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/workers/agentd/codextest"
	"github.com/svcd/svcd/workers/agentd/fakemodel"
)

// agentRig is svcd serve spawning the agentd worker, which drives the real
// codex app-server against the fake model server.
type agentRig struct {
	t      testing.TB
	d      *harness.Daemon
	fm     *fakemodel.Server
	agentd string // host:port of agentd's own listener
}

func startAgentRig(t testing.TB) *agentRig { return startAgentRigWith(t) }

// startAgentRigWith starts the rig's daemon with extra environment.
func startAgentRigWith(t testing.TB, extraEnv ...string) *agentRig {
	bin := codextest.Bin(t)
	fm := fakemodel.New()
	if err := fm.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fm.Close() })
	addr := harness.FreePort(t)
	home := codextest.Home(t, fm.BaseURL())
	// Runs after the daemon's kill and before home is removed: a Codex
	// child has its own process group and exits on its own once agentd is
	// gone, writing into home meanwhile (removing home under it failed
	// with "directory not empty").
	t.Cleanup(func() {
		waitDead(t, 30*time.Second, "Codex processes of this rig", processesWithEnv("CODEX_HOME="+home)...)
	})
	d := harness.Start(t, harness.Options{Env: append([]string{
		"SVC_AGENTD_SPAWN=true", "SVC_AGENTD_LISTEN=" + addr, "SVC_AGENTD_COMMAND=" + bin + " app-server",
		"SVC_AGENTD_CODEX_HOME=" + home, "SVC_WORKER_BACKOFF_BASE_MS=50", codextest.ShellHomeEnv(t),
	}, extraEnv...)})
	r := &agentRig{t: t, d: d, fm: fm, agentd: addr}
	r.waitAgent()
	return r
}

// waitAgent polls GET /v1/agent until agentd answers with a running child.
func (r *agentRig) waitAgent() map[string]any {
	r.t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for {
		resp := r.d.Do("GET", "/v1/agent", nil)
		if resp.Status == 200 {
			data := resp.JSON(r.t)["data"].(map[string]any)
			child := data["agentd"].(map[string]any)["child"].(map[string]any)
			if child["state"] == "running" {
				return data
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("agentd never came up behind the proxy: %d %s\nlogs:\n%s", resp.Status, resp.Body, r.d.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func sessionOf(t testing.TB, resp *harness.Response) map[string]any {
	t.Helper()
	if resp.Status != 200 {
		t.Fatalf("status %d: %s", resp.Status, resp.Body)
	}
	return resp.JSON(t)["data"].(map[string]any)["session"].(map[string]any)
}

func errCode(t *testing.T, resp *harness.Response) string {
	t.Helper()
	e, _ := resp.JSON(t)["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// TestAgentProxyAndDirect: through the main daemon's proxy and directly on
// agentd: create, a turn streamed in order on the event WebSocket and read
// back in lastTurn*, bad bodies and unknown sessions, no run route, and the
// agentd worker SIGKILLed — the main daemon keeps serving, the supervisor
// restarts agentd, the session survives and its thread resumes.
func TestAgentProxyAndDirect(t *testing.T) {
	r := startAgentRig(t)
	d := r.d
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+r.agentd+"/v1/agentd/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	s := sessionOf(t, d.DoAuth("POST", "/v1/agent/sessions", map[string]any{"cwd": t.TempDir(), "purpose": "e2e"}))
	id, thread := s["sessionId"].(string), s["threadId"]
	want := "streamed through the proxy in order"
	r.fm.Push(fakemodel.Reply{Text: want, Chunks: 6})
	if resp := d.DoAuth("POST", "/v1/agent/turn", map[string]any{"sessionId": id, "input": "go"}); resp.Status != 200 {
		t.Fatalf("turn via proxy: %d %s", resp.Status, resp.Body)
	}
	var got strings.Builder
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var e map[string]any
		if err := ws.ReadJSON(&e); err != nil {
			t.Fatalf("events: %v (so far %q)", err, got.String())
		}
		if e["sessionId"] != id {
			continue
		}
		if e["type"] == "item/agentMessage/delta" {
			got.WriteString(e["delta"].(string))
		}
		if e["type"] == "turn/completed" {
			break
		}
	}
	if got.String() != want {
		t.Fatalf("stream %q, want %q", got.String(), want)
	}
	if s := sessionOf(t, d.Do("GET", "/v1/agent/sessions/"+id, nil)); s["lastTurnOutput"] != want || s["lastTurnStatus"] != "completed" {
		t.Fatalf("read-back via proxy: %v", s)
	}

	// Directly on agentd: writes need the token; with it, waitMs answers the text.
	direct := "http://" + r.agentd
	if resp := harness.Do(t, "POST", direct+"/v1/agentd/turn", map[string]any{"sessionId": id, "input": "x"}); resp.Status != 401 {
		t.Fatalf("direct write without token: %d %s", resp.Status, resp.Body)
	}
	r.fm.Push(fakemodel.Reply{Text: "direct answer"})
	resp := harness.Do(t, "POST", direct+"/v1/agentd/turn", map[string]any{"sessionId": id, "input": "direct", "waitMs": 20000},
		"Authorization: Bearer "+d.Token)
	if s := sessionOf(t, resp); s["lastTurnOutput"] != "direct answer" {
		t.Fatalf("direct turn: %v", s)
	}

	// Bad input through the proxy: clear JSON errors, nothing changes.
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{"POST", "/v1/agent/run", map[string]any{}, 404, "route_not_found"},
		{"POST", "/v1/agent/turn", map[string]any{"sessionId": id, "input": "x", "bogus": true}, 422, "unknown_field"},
		{"POST", "/v1/agent/turn", map[string]any{"sessionId": "ses_missing", "input": "x"}, 404, "unknown_session"},
		{"POST", "/v1/agent/turn", `{"sessionId":`, 400, "malformed_json"},
		{"GET", "/v1/agent/sessions/ses_missing", nil, 404, "unknown_session"},
		// An escaped ? or / in the id stays part of the id upstream: it
		// must not become agentd's query or path (the list of sessions).
		{"GET", "/v1/agent/sessions/" + id + "%3Fx=1", nil, 404, "unknown_session"},
		{"GET", "/v1/agent/sessions/" + id + "%23frag", nil, 404, "unknown_session"},
	} {
		resp := d.DoAuth(c.method, c.path, c.body)
		if resp.Status != c.status || errCode(t, resp) != c.code {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.path, resp.Status, resp.Body, c.status, c.code)
		}
	}
	if resp := d.Do("POST", "/v1/agent/turn", map[string]any{"sessionId": id, "input": "x"}); resp.Status != 401 {
		t.Errorf("proxy write without token: %d", resp.Status)
	}

	// SIGKILL the agentd worker: the main daemon keeps serving, agentd comes back.
	var workers struct {
		Data struct {
			Workers []struct {
				Name string `json:"name"`
				Pid  int    `json:"pid"`
			} `json:"workers"`
		} `json:"data"`
	}
	_ = json.Unmarshal(d.Do("GET", "/v1/workers", nil).Body, &workers)
	pid := 0
	for _, w := range workers.Data.Workers {
		if w.Name == "agentd" {
			pid = w.Pid
		}
	}
	if pid == 0 {
		t.Fatalf("no agentd worker in %+v", workers)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if resp := d.Do("GET", "/healthz", nil); resp.Status != 200 {
		t.Fatalf("main daemon after agentd kill: %d", resp.Status)
	}
	if resp := d.Do("GET", "/v1/status", nil); resp.Status != 200 {
		t.Fatalf("main daemon status after agentd kill: %d", resp.Status)
	}
	time.Sleep(100 * time.Millisecond)
	r.waitAgent()
	s = sessionOf(t, d.DoAuth("POST", "/v1/agent/sessions", map[string]any{"sessionId": id}))
	if s["threadId"] != thread {
		t.Fatalf("thread changed across the agentd restart: %v -> %v", thread, s["threadId"])
	}
	r.fm.Push(fakemodel.Reply{Text: "after restart"})
	if s := sessionOf(t, d.DoAuth("POST", "/v1/agent/turn", map[string]any{"sessionId": id, "input": "again", "waitMs": 20000})); s["lastTurnOutput"] != "after restart" {
		t.Fatalf("turn after agentd restart: %v", s)
	}

	// A rolling restart hands the port, the store and the child over to the
	// new instance: the session and its thread carry on.
	if resp := d.DoAuth("POST", "/v1/workers/restart", map[string]any{"worker": "agentd"}); resp.Status != 200 {
		t.Fatalf("rolling restart: %d %s", resp.Status, resp.Body)
	}
	r.waitAgent()
	r.fm.Push(fakemodel.Reply{Text: "after rolling restart"})
	s = sessionOf(t, d.DoAuth("POST", "/v1/agent/turn", map[string]any{"sessionId": id, "input": "roll", "waitMs": 20000}))
	if s["lastTurnOutput"] != "after rolling restart" || s["threadId"] != thread {
		t.Fatalf("turn after rolling restart: %v", s)
	}
}

// TestAgentdDownAnd503: with agentd not running the proxy answers 503
// agent_unavailable and everything else keeps serving; `svcd agentd` started
// by hand on the configured address is then reached through the proxy.
func TestAgentdDownAnd503(t *testing.T) {
	addr := harness.FreePort(t)
	// agentd runs by default: this test is about the daemon without it.
	d := harness.Start(t, harness.Options{Env: []string{"SVC_AGENTD_LISTEN=" + addr, "SVC_AGENTD_SPAWN=false"}})
	for _, c := range []struct{ method, path string }{{"GET", "/v1/agent"}, {"GET", "/v1/agent/sessions"}, {"POST", "/v1/agent/turn"}} {
		var body any
		if c.method == "POST" {
			body = map[string]any{"sessionId": "x", "input": "y"}
		}
		resp := d.DoAuth(c.method, c.path, body)
		if resp.Status != 503 || errCode(t, resp) != "agent_unavailable" {
			t.Errorf("%s %s with agentd down: %d %s", c.method, c.path, resp.Status, resp.Body)
		}
	}
	if resp := d.Do("GET", "/v1/status", nil); resp.Status != 200 {
		t.Fatalf("status with agentd down: %d", resp.Status)
	}
	// svcd agentd on its own, with a child that does not exist: it still runs
	// and says so; the proxy reaches it.
	cmd := exec.Command(harness.Binary(t), "agentd", "-listen", addr, "-data-dir", t.TempDir(), "-codex", "/nonexistent/codex app-server")
	cmd.Env = append(cmd.Environ(), "SVC_SHARED_TOKEN="+d.Token)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp := d.Do("GET", "/v1/agent", nil)
		if resp.Status == 200 {
			child := resp.JSON(t)["data"].(map[string]any)["agentd"].(map[string]any)["child"].(map[string]any)
			if child["state"] == "missing" && child["looked_for"] == "/nonexistent/codex" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("standalone agentd not reached: %d %s", resp.Status, resp.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp := d.DoAuth("POST", "/v1/agent/sessions", map[string]any{"cwd": t.TempDir()})
	if resp.Status != 503 || errCode(t, resp) != "agent_child_unavailable" {
		t.Fatalf("create with no child: %d %s", resp.Status, resp.Body)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if resp := d.Do("GET", "/v1/agent", nil); resp.Status != 503 || errCode(t, resp) != "agent_unavailable" {
		t.Fatalf("after agentd died: %d %s", resp.Status, resp.Body)
	}
}

// One full loop with the real agent: the (fake) model's reply carries instr
// blocks; the real codex app-server turns it into the session's last turn
// output; that reply is ingested, its blocks run, and the report is read
// back — then sent to the agent as the next turn's input.
func TestInstructionLoopWithTheRealAgent(t *testing.T) {
	r := startAgentRig(t)
	d := r.d
	s := sessionOf(t, d.DoAuth("POST", "/v1/agent/sessions", map[string]any{"cwd": t.TempDir(), "purpose": "instr loop"}))
	id := s["sessionId"].(string)
	reply := "I will check the host.\n```instr\n@svc::exec::echo loop-ok\n```\n```instr\n@svc::status\n```\n"
	r.fm.Push(fakemodel.Reply{Text: reply, Chunks: 4})
	turn := sessionOf(t, d.DoAuth("POST", "/v1/agent/turn", map[string]any{"sessionId": id, "input": "check the host", "waitMs": 30000}))
	out, _ := turn["lastTurnOutput"].(string)
	if out != reply {
		t.Fatalf("the agent's reply: %q", out)
	}
	res := d.DoAuth("POST", "/v1/instructions/ingest", map[string]any{"platform": "platform_a", "local_conversation_id": "agent-" + id[:8],
		"remote_conversation_id": id, "message_id": "turn-1", "text": out})
	if res.Status != 200 {
		t.Fatalf("ingest: %d %s", res.Status, res.Body)
	}
	var env struct {
		Data struct {
			Ingest struct {
				Status string `json:"status"`
				Report string `json:"report"`
			} `json:"ingest"`
		} `json:"data"`
	}
	res.Decode(t, &env)
	report := env.Data.Ingest.Report
	if env.Data.Ingest.Status != "executed" || !strings.Contains(report, "-- @svc::exec --\n成功") || !strings.Contains(report, "loop-ok") || !strings.Contains(report, "-- @svc::status --\n成功") {
		t.Fatalf("report: %s\n%s", env.Data.Ingest.Status, report)
	}
	// The report goes back to the agent as the next input; its own output
	// carries the result marker, so the loop would never execute it.
	r.fm.Push(fakemodel.Reply{Text: "Thanks, the host is fine."})
	next := sessionOf(t, d.DoAuth("POST", "/v1/agent/turn", map[string]any{"sessionId": id, "input": report, "waitMs": 30000}))
	if next["lastTurnOutput"] != "Thanks, the host is fine." || next["lastTurnInput"] != report {
		t.Fatalf("next turn: %v", next)
	}
}
