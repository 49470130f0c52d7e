package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// TestRaftFieldsRenderInJSONLogs (issue 35): with -log-json, raft's own
// fields (the *raft.Raft in "entering leader state") printed as {}; they
// are now their text, as in the plain format.
func TestRaftFieldsRenderInJSONLogs(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{Args: []string{"-log-json"}})
	if !d.WaitLog("entering leader state", 10*time.Second) {
		t.Fatalf("no leader line:\n%s", d.Logs())
	}
	for _, line := range strings.Split(d.Logs(), "\n") {
		if !strings.Contains(line, "entering leader state") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		if s, ok := m["leader"].(string); !ok || !strings.Contains(s, "Node at") {
			t.Fatalf("raft's leader field = %#v, want its text: %s", m["leader"], line)
		}
		return
	}
	t.Fatal("leader line not found")
}
