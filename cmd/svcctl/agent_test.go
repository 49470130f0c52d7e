package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/workers/agentd/codextest"
	"github.com/svcd/svcd/workers/agentd/fakemodel"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestAgentCommands drives svcctl agent status, create, turn, sessions and
// watch against svcd with the agentd worker and the real codex app-server.
func TestAgentCommands(t *testing.T) {
	bin := codextest.Bin(t)
	fm := fakemodel.New()
	if err := fm.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer fm.Close()
	d := harness.Start(t, harness.Options{Env: []string{"SVC_AGENTD_SPAWN=true", "SVC_AGENTD_LISTEN=" + harness.FreePort(t),
		"SVC_AGENTD_COMMAND=" + bin + " app-server", "SVC_AGENTD_CODEX_HOME=" + codextest.Home(t, fm.BaseURL()), codextest.ShellHomeEnv(t)}})
	deadline := time.Now().Add(40 * time.Second)
	for {
		code, out, _ := svcctlJSON(t, d, "agent", "status")
		if code == 0 && strings.Contains(out, `"state": "running"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent status never showed a running child: %d %s", code, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, out, errOut := svcctlJSON(t, d, "agent", "create", "-cwd", t.TempDir(), "-purpose", "cli")
	if code != 0 {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	var created struct {
		Data struct {
			Session struct {
				SessionID string `json:"sessionId"`
			} `json:"session"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Data.Session.SessionID == "" {
		t.Fatalf("create output: %v %s", err, out)
	}
	id := created.Data.Session.SessionID

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	watched := &lockedBuf{}
	done := make(chan error, 1)
	go func() {
		c := newClient(d.URL, d.Token, func(string) string { return "" }, watched)
		c.format = formatJSON
		done <- runAgent(ctx, c, []string{"watch", id})
	}()
	for !strings.Contains(watched.String(), `{"event":"open"`) {
		if ctx.Err() != nil {
			t.Fatalf("watch never subscribed: %s", watched.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	fm.Push(fakemodel.Reply{Text: "cli reply"})
	code, out, errOut = svcctlJSON(t, d, "agent", "turn", "-wait-ms", "20000", id, "hello", "there")
	if code != 0 || !strings.Contains(out, `"lastTurnOutput": "cli reply"`) || !strings.Contains(out, `"lastTurnInput": "hello there"`) {
		t.Fatalf("turn: %d %s %s", code, out, errOut)
	}
	for !strings.Contains(watched.String(), `"turn/completed"`) {
		if ctx.Err() != nil {
			t.Fatalf("watch did not show the turn: %s", watched.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch: %v", err)
	}
	if code, out, _ := svcctlJSON(t, d, "agent", "sessions", id); code != 0 || !strings.Contains(out, "cli reply") {
		t.Fatalf("sessions ID: %d %s", code, out)
	}
	if code, _, _ := svcctlJSON(t, d, "agent", "sessions", "ses_missing"); code != 1 {
		t.Fatalf("unknown session exit %d, want 1", code)
	}
	for _, args := range [][]string{{"agent"}, {"agent", "run"}, {"agent", "create"}, {"agent", "turn", id}} {
		if code, _, _ := svcctlJSON(t, d, args...); code != 2 {
			t.Errorf("svcctl %v exit %d, want 2", args, code)
		}
	}
}
