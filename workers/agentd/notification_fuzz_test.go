package agentd

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzNotification feeds arbitrary Codex notifications (method and params)
// into agentd's folding of events into session state: nothing may panic,
// a running session stays consistent, and its lastTurnOutput only grows by
// the deltas it was given.
func FuzzNotification(f *testing.F) {
	f.Add("item/agentMessage/delta", `{"threadId":"th","turnId":"tu","delta":"hé"}`)
	f.Add("turn/completed", `{"threadId":"th","turn":{"id":"tu","status":"failed","error":{"message":"boom"}}}`)
	f.Add("turn/started", `{"threadId":"th","turn":{"id":"tu"}}`)
	f.Add("error", `{"threadId":"th","turnId":"tu","error":{"message":"x"},"willRetry":false}`)
	f.Add("something/new", `[1,2,3]`)
	f.Add("turn/completed", `{"threadId":"th","turn":null}`)
	d, err := New(Config{DataDir: f.TempDir(), Command: []string{"/nonexistent/codex"}, RestartMin: time.Hour}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(d.Close)
	f.Fuzz(func(t *testing.T, method, params string) {
		d.mu.Lock()
		s := &Session{SessionID: "ses", ThreadID: "th", Status: "running", LastTurnStatus: "running", RecentEvents: []Event{}}
		d.sessions = map[string]*Session{"ses": s}
		d.byThread = map[string]string{"th": "ses"}
		d.mu.Unlock()
		d.onNotification(method, json.RawMessage(params))
		d.mu.Lock()
		defer d.mu.Unlock()
		if len(s.RecentEvents) > maxRecentEvents {
			t.Fatalf("recentEvents unbounded: %d", len(s.RecentEvents))
		}
		if s.Status == "idle" && s.LastTurnFinished.IsZero() {
			t.Fatal("turn finished without a finish time")
		}
		if s.Status != "idle" && s.Status != "running" {
			t.Fatalf("status %q", s.Status)
		}
	})
}
