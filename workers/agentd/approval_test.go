package agentd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcd/svcd/workers/agentd"
	"github.com/svcd/svcd/workers/agentd/fakemodel"
)

// TestApprovalPolicy: the fake model asks Codex to run a command; Codex,
// configured to ask first, sends item/commandExecution/requestApproval, and
// agentd answers by its policy: decline (default) leaves the file uncreated,
// accept lets the command run. Either way the turn then completes.
func TestApprovalPolicy(t *testing.T) {
	for _, policy := range []string{"decline", "accept"} {
		t.Run(policy, func(t *testing.T) {
			r := newRigWith(t, func(cfg *agentd.Config) {
				cfg.ApprovalPolicy = policy
				path := filepath.Join(cfg.CodexHome, "config.toml")
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(strings.Replace(string(b), `approval_policy = "never"`, `approval_policy = "on-request"`, 1)), 0o600); err != nil {
					t.Fatal(err)
				}
			})
			id := r.create()
			_, body := r.do("GET", "/v1/agentd/sessions/"+id, nil, false)
			marker := filepath.Join(session(body)["cwd"].(string), "marker")
			args, _ := json.Marshal(map[string]any{"cmd": "touch " + marker, "sandbox_permissions": "require_escalated", "justification": "the test asks for it"})
			r.fm.Push(fakemodel.Reply{ToolCall: &fakemodel.ToolCall{Name: "exec_command", Arguments: string(args)}},
				fakemodel.Reply{Text: "done after the command"})
			code, body := r.turn(id, "make a marker", 30000)
			s := session(body)
			if code != 200 || s["lastTurnStatus"] != "completed" || s["lastTurnOutput"] != "done after the command" {
				t.Fatalf("turn: %d %v", code, body)
			}
			_, st := r.do("GET", "/v1/agentd/status", nil, false)
			raw, _ := json.Marshal(st)
			if !strings.Contains(string(raw), "item/commandExecution/requestApproval") || !strings.Contains(string(raw), "answered "+policy) {
				t.Fatalf("no approval request answered %s in status: %s", policy, raw)
			}
			found := false
			for _, e := range s["recentEvents"].([]any) {
				if e.(map[string]any)["type"] == "item/commandExecution/requestApproval" {
					found = true
				}
			}
			if !found {
				t.Errorf("the approval request is not in the session's recentEvents: %v", s["recentEvents"])
			}
			_, err := os.Stat(marker)
			if policy == "decline" && err == nil {
				t.Fatal("declined command ran")
			}
			if policy == "accept" && err != nil {
				t.Fatalf("accepted command did not run: %v", err)
			}
		})
	}
}
