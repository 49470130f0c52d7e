package codexrpc_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcd/svcd/workers/agentd/codexrpc"
	"github.com/svcd/svcd/workers/agentd/codextest"
	"github.com/svcd/svcd/workers/agentd/fakemodel"
)

type note struct {
	method string
	params json.RawMessage
}

// TestRealTurn drives the real codex app-server through initialize,
// thread/start and turn/start against the fake model, checks the streamed
// text arrives in order, and validates every line sent against the schema.
func TestRealTurn(t *testing.T) {
	bin := codextest.Bin(t)
	fm := fakemodel.New()
	if err := fm.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer fm.Close()
	want := "Hello from the fake model, streamed in pieces."
	fm.Push(fakemodel.Reply{Text: want, Chunks: 5})

	notes := make(chan note, 256)
	var sentMu sync.Mutex
	var sent [][]byte
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := codexrpc.Start(ctx, codexrpc.Options{
		Command:        []string{bin, "app-server"},
		Env:            []string{"CODEX_HOME=" + codextest.Home(t, fm.BaseURL()), codextest.ShellHomeEnv(t)},
		OnNotification: func(m string, p json.RawMessage) { notes <- note{m, p} },
		OnSend: func(b []byte) {
			sentMu.Lock()
			sent = append(sent, append([]byte(nil), b...))
			sentMu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	th, err := c.StartThread(ctx, t.TempDir())
	if err != nil || th.ID == "" {
		t.Fatalf("thread/start: %v %+v", err, th)
	}
	turn, err := c.StartTurn(ctx, th.ID, "say hello")
	if err != nil || turn.ID == "" {
		t.Fatalf("turn/start: %v %+v", err, turn)
	}
	var text strings.Builder
	seen := map[string]bool{}
	for done := false; !done; {
		select {
		case n := <-notes:
			seen[n.method] = true
			switch n.method {
			case "item/agentMessage/delta":
				var d struct {
					Delta string `json:"delta"`
				}
				_ = json.Unmarshal(n.params, &d)
				text.WriteString(d.Delta)
			case "turn/completed":
				done = true
			}
		case <-ctx.Done():
			t.Fatalf("no turn/completed; saw %v", seen)
		}
	}
	if text.String() != want {
		t.Fatalf("streamed text %q, want %q", text.String(), want)
	}
	for _, m := range []string{"turn/started", "item/started", "item/completed"} {
		if !seen[m] {
			t.Errorf("no %s notification; saw %v", m, seen)
		}
	}
	if _, err := c.ResumeThread(ctx, th.ID, ""); err != nil {
		t.Fatalf("thread/resume of a thread with a turn: %v", err)
	}
	if err := c.InterruptTurn(ctx, th.ID, turn.ID); err == nil {
		t.Log("interrupting a finished turn was accepted")
	}
	sentMu.Lock()
	defer sentMu.Unlock()
	if len(sent) < 4 {
		t.Fatalf("only %d lines sent", len(sent))
	}
	v := loadSchema(t)
	for _, line := range sent {
		if err := v.validate(line); err != nil {
			t.Errorf("sent line does not match the schema: %v\n%s", err, line)
		}
	}
}
