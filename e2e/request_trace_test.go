package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
)

// logLine is one JSON log line of the daemon: its own, or a worker's that
// go-plugin forwarded through the supervisor's logger.
type logLine map[string]any

func (l logLine) str(k string) string { s, _ := l[k].(string); return s }

// linesWithID returns the daemon's JSON log lines whose request_id is id.
func linesWithID(d *harness.Daemon, id string) []logLine {
	var out []logLine
	for _, raw := range strings.Split(d.Logs(), "\n") {
		var l logLine
		if json.Unmarshal([]byte(raw), &l) != nil {
			continue
		}
		if l.str("request_id") == id {
			out = append(out, l)
		}
	}
	return out
}

// traceOf waits until the daemon's log holds, for id, the supervisor's
// access line and its line with message super, and a line the worker named
// worker wrote for the call, and returns them all. (The access line is
// written once the answer is sent, so it may come after the caller has it.)
func traceOf(t *testing.T, d *harness.Daemon, id, super, worker string) []logLine {
	t.Helper()
	var lines []logLine
	found := func() (sup, wk, access bool) {
		lines = linesWithID(d, id)
		for _, l := range lines {
			mod := l.str("@module")
			switch {
			case l.str("@message") == "request" && mod == "svcd":
				access = true
			case l.str("@message") == super && !strings.Contains(mod, worker):
				sup = true
			case (l.str("@message") == "grpc call" || l.str("@message") == "hop call") && strings.Contains(mod, worker):
				wk = true
			}
		}
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		sup, wk, access := found()
		if sup && wk && access {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s: access line found %v, supervisor line %q found %v, %s worker's grpc call line found %v; lines with the id: %v\nlogs:\n%s",
				id, access, super, sup, worker, wk, lines, d.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// One grep for the request id of an exec finds the supervisor's lines (the
// access line, the exec line) and the hostops worker's line for the call.
func TestRequestIDFollowsExec(t *testing.T) {
	d := harness.Start(t, harness.Options{Env: []string{"SVC_LOG_LEVEL=debug", "SVC_LOG_JSON=true"}})

	const id = "trace-exec-7f3a"
	r := d.DoAuth("POST", "/v1/exec", map[string]any{"command": "echo traced"}, "X-Request-Id: "+id)
	if r.Status != 200 || r.Header.Get("X-Request-Id") != id {
		t.Fatalf("exec: %d, X-Request-Id %q: %s", r.Status, r.Header.Get("X-Request-Id"), r.Body)
	}
	hop := false
	for _, l := range traceOf(t, d, id, "exec", "hostops") {
		if l.str("@message") == "request" && l.str("path") != "/v1/exec" {
			t.Fatalf("the access line of %s names another path: %v", id, l)
		}
		hop = hop || l.str("@message") == "hop call"
	}
	if !hop { // exec goes over the worker's hop, not gRPC: the id must cross it
		t.Fatalf("no hostops line for %s came from the exec hop:\n%s", id, d.Logs())
	}

	// Without an id the daemon makes one, and the same holds for it.
	r = d.DoAuth("POST", "/v1/exec", map[string]any{"command": "true"})
	made := r.Header.Get("X-Request-Id")
	if r.Status != 200 || made == "" {
		t.Fatalf("exec without an id: %d %q", r.Status, made)
	}
	traceOf(t, d, made, "exec", "hostops")

	// An id that could forge or garble a log line is replaced, never echoed
	// nor logged.
	for _, bad := range []string{`bad" id`, "x" + strings.Repeat("y", 80), "id with spaces", "éé"} {
		r = d.DoAuth("POST", "/v1/exec", map[string]any{"command": "true"}, "X-Request-Id: "+bad)
		got := r.Header.Get("X-Request-Id")
		if r.Status != 200 || got == bad || got == "" {
			t.Fatalf("bad id %q: %d, answered with %q", bad, r.Status, got)
		}
		traceOf(t, d, got, "exec", "hostops")
		if strings.Contains(d.Logs(), bad) {
			t.Fatalf("the refused id %q reached the log", bad)
		}
	}
}

// The same for a relayed browser request: the supervisor's relay line and
// the relay worker's line for the lease the request needed.
func TestRequestIDFollowsRelay(t *testing.T) {
	d := startBrowserDaemon(t, "SVC_LOG_JSON=true")
	plat := fakeplugin.NewPlatform("s")
	defer plat.Close()
	connectPlugin(t, d, "trace-1", plat)
	waitUntil(t, 10*time.Second, "relay worker running", func() bool { return relayWorker(t, d).State == "running" })

	const id = "trace-relay-9c1d"
	r := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo"}, "X-Request-Id: "+id)
	if r.Status != 200 || r.Header.Get("X-Request-Id") != id {
		t.Fatalf("relay: %d, X-Request-Id %q: %s", r.Status, r.Header.Get("X-Request-Id"), r.Body)
	}
	traceOf(t, d, id, "browser relay", "relay")
}
