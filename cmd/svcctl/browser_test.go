package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/raftstore/raftstoretest"
	"github.com/svcd/svcd/shared/bridgeproto"
)

func TestBrowserCommandsAgainstTheDaemon(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	if code, out, _ := svcctlJSON(t, d, "browser", "request", "--platform", "platform_b", "--path", "/api/echo"); code != 1 || !strings.Contains(out, "no_browser_client") {
		t.Fatalf("no client: exit %d %s", code, out)
	}
	plat := fakeplugin.NewPlatform("s")
	defer plat.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, _, err := fakeplugin.Dial(ctx, fakeplugin.Options{URL: "ws://" + d.Addr + "/ws/browser", Token: d.Token, ClientID: "cli-1",
		Platforms: map[string]string{bridgeproto.PlatformB: plat.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	code, out, errOut := svcctlJSON(t, d, "browser", "ls", "--client", "cli-1")
	if code != 0 || !strings.Contains(out, `"client_id": "cli-1"`) || !strings.Contains(out, `"active_only"`) {
		t.Fatalf("ls: %d %s %s", code, out, errOut)
	}
	code, out, _ = svcctlJSON(t, d, "browser", "request", "--platform", "platform_b", "--path", "/api/echo", "--method", "POST", "--body", `{"x":1}`, "--id", "cli-req")
	if code != 0 || !strings.Contains(out, `"requestId": "cli-req"`) || !strings.Contains(out, `"status": 200`) {
		t.Fatalf("request: %d %s", code, out)
	}
	code, out, _ = svcctlJSON(t, d, "browser", "request", "--platform", "platform_b", "--path", "/api/stream?n=2", "--sse")
	if code != 0 || strings.Count(out, "event: stream_event") != 2 || !strings.Contains(out, "event: stream_end") {
		t.Fatalf("sse: %d %s", code, out)
	}
	// For people: one line per event, time since the start, the stream's
	// identifiers only on the first line.
	code, out, _ = svcctl(t, d, "browser", "request", "--platform", "platform_b", "--path", "/api/stream?n=2", "--sse", "--id", "cli-sse")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || strings.Contains(out, "event: ") || strings.Contains(out, "data: ") {
		t.Fatalf("human sse: %d\n%s", code, out)
	}
	for i, want := range []string{"stream_open", "stream_event", "stream_event", "stream_end"} {
		f := strings.Fields(lines[i])
		if len(f) < 2 || !strings.HasPrefix(f[0], "+") || !strings.HasSuffix(f[0], "s") || f[1] != want {
			t.Fatalf("human sse line %d %q, want +Ns %s", i, lines[i], want)
		}
	}
	if !strings.Contains(lines[0], "requestId=cli-sse") || strings.Contains(lines[1], "requestId") || !strings.Contains(lines[1], "seq=1") || !strings.Contains(lines[2], "seq=2") {
		t.Fatalf("human sse fields:\n%s", out)
	}
	code, out, _ = svcctlJSON(t, d, "browser", "action", "ws_reconnect", "delay_ms=20", "repeat_count=1")
	if code != 0 || !strings.Contains(out, `"disconnectMs": 20`) || !strings.Contains(out, `"completed": true`) {
		t.Fatalf("action: %d %s", code, out)
	}
	if code, out, _ = svcctlJSON(t, d, "browser", "action", "explode"); code != 1 || !strings.Contains(out, "invalid_action") {
		t.Fatalf("bad action: %d %s", code, out)
	}
	if code, out, _ = svcctlJSON(t, d, "browser", "cancel", "--platform", "platform_b", "--id", "nope"); code != 1 || !strings.Contains(out, "unknown_request") {
		t.Fatalf("cancel: %d %s", code, out)
	}
	if code, _, _ = svcctlJSON(t, d, "browser", "request"); code != 2 {
		t.Fatalf("usage error exit %d", code)
	}
}

// browser ls shows every record: past one page (GET /v1/browser's default
// limit is 50) it follows next_cursor and prints them all at once.
func TestBrowserLsFollowsNextCursor(t *testing.T) {
	dir := t.TempDir()
	n, err := raftstore.Open(raftstore.Config{DataDir: dir, NodeID: "node1", Bootstrap: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := raftstoretest.Fill(ctx, n, raftstoretest.Scale{Browser: 230, Conversations: 150}); err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	d := harness.Start(t, harness.Options{DataDir: dir})
	code, out, errOut := svcctlJSON(t, d, "browser", "ls")
	var env struct {
		Data struct {
			Records []struct {
				Key string `json:"key"`
			} `json:"records"`
			Automation []any                            `json:"automation_conversations"`
			Policy     struct{ Targets map[string]any } `json:"policy"`
			Next       *string                          `json:"next_cursor"`
		} `json:"data"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &env) != nil {
		t.Fatalf("ls: %d %s %s", code, out, errOut)
	}
	keys := map[string]bool{}
	for _, r := range env.Data.Records {
		keys[r.Key] = true
	}
	if len(env.Data.Records) != 230 || len(keys) != 230 || len(env.Data.Automation) != 150 || len(env.Data.Policy.Targets) != 230 || env.Data.Next != nil {
		t.Fatalf("ls: %d records (%d distinct), %d conversations, %d targets, next %v", len(env.Data.Records), len(keys), len(env.Data.Automation), len(env.Data.Policy.Targets), env.Data.Next)
	}
	// Filters still apply on every page (Fill gives client-3 every 40th
	// record of 230: 6).
	code, out, _ = svcctlJSON(t, d, "browser", "ls", "--client", "client-3")
	var one struct {
		Data struct {
			Records []struct {
				ClientID string `json:"client_id"`
			} `json:"records"`
		} `json:"data"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &one) != nil || len(one.Data.Records) != 6 {
		t.Fatalf("ls --client: %d %s", code, out)
	}
	for _, r := range one.Data.Records {
		if r.ClientID != "client-3" {
			t.Fatalf("ls --client client-3 shows %s", r.ClientID)
		}
	}
}
