package instructions

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestToolTable pins SPEC.md's tool table and the targets' routing.
func TestToolTable(t *testing.T) {
	reg := NewRegistry()
	cases := []struct {
		target, tool string
		params       map[string]any
		want         string // "METHOD PATH BODY" or "control OP" or "error: substring"
	}{
		{"svc", "exec", map[string]any{"command": "ls"}, `POST /v1/exec {"command":"ls"}`},
		{"system", "exec", map[string]any{"command": "ls"}, `POST /v1/exec {"command":"ls"}`},
		{"svc", "files/read", map[string]any{"command": "/etc/hostname"}, `POST /v1/files/read {"path":"/etc/hostname"}`},
		{"svc", "files/read", map[string]any{"path": "a", "command": "b"}, `error: both "path" and plain text`},
		{"svc", "files/write", map[string]any{"path": "a", "command": "hi"}, `POST /v1/files/write {"content":"hi","path":"a"}`},
		{"svc", "describe", map[string]any{}, `GET /describe null`},
		{"svc", "describe/business", map[string]any{}, `GET /describe/business null`},
		{"svc", "describe/control", map[string]any{}, `GET /describe/control null`},
		{"svc", "status", map[string]any{}, `GET /v1/status null`},
		{"svc", "status", map[string]any{"command": "x"}, `error: takes no parameters`},
		{"svc", "browser/status", map[string]any{}, `GET /v1/browser null`},
		{"svc", "browser/request", map[string]any{"platform": "platform_a", "path": "/x"}, `POST /v1/browser/request {"path":"/x","platform":"platform_a"}`},
		{"svc", "browser/actions", map[string]any{"action": "reload"}, `POST /v1/browser/actions {"action":"reload"}`},
		{"svc", "agent/sessions", map[string]any{"cwd": "/tmp"}, `POST /v1/agent/sessions {"cwd":"/tmp"}`},
		{"svc", "agent/turn", map[string]any{"sessionId": "s1", "command": "hi"}, `POST /v1/agent/turn {"input":"hi","sessionId":"s1"}`},
		{"svc", "tasks", map[string]any{"status": "queued", "limit": json.Number("5")}, `GET /v1/tasks?limit=5&status=queued null`},
		{"svc", "tasks", map[string]any{"x": "1"}, `error: takes status and limit`},
		{"svc", "system/pause", map[string]any{"command": "maintenance"}, `POST /v1/system/pause {"reason":"maintenance","requested_by":"instruction"}`},
		{"system", "system/resume", map[string]any{}, `POST /v1/system/resume {"requested_by":"instruction"}`},
		{"svc", "conversation/pause", map[string]any{"scope": "current", "reason": "r"}, `control pause r`},
		{"svc", "conversation/pause", map[string]any{}, `control pause `},
		{"svc", "conversation/pause", map[string]any{"scope": "all"}, `error: scope "all" is not supported`},
		{"svc", "conversation/resume", map[string]any{"scope": "current"}, `control resume `},
		{"svc", "conversation/resume", map[string]any{"reason": "x"}, `error: takes scope, not "reason"`},
		{"svc", "conversation/mode", map[string]any{"scope": "current", "mode": "auto"}, `control mode auto`},
		{"svc", "conversation/mode", map[string]any{"mode": "paused"}, `error: mode must be`},
		{"svc", "shell", map[string]any{}, `error: unknown tool "shell"`},
		{"agent", "status", map[string]any{}, `GET /v1/agent null`},
		{"agent", "turn", map[string]any{"sessionId": "s", "command": "go"}, `POST /v1/agent/turn {"input":"go","sessionId":"s"}`},
		{"agent", "agent/sessions", map[string]any{"command": "review"}, `POST /v1/agent/sessions {"purpose":"review"}`},
		{"agent", "exec", map[string]any{}, `error: unknown agent tool`},
		{"browser", "request", map[string]any{"command": "hello", "platform": "platform_b"}, `POST /v1/browser/request {"platform":"platform_b","prompt":"hello"}`},
		{"browser.platform_a", "request", map[string]any{"command": "hello"}, `POST /v1/browser/request {"platform":"platform_a","prompt":"hello"}`},
		{"browser.platform_c", "browser/request", map[string]any{"path": "/v"}, `POST /v1/browser/request {"path":"/v","platform":"platform_c"}`},
		{"browser.platform_a", "request", map[string]any{"platform": "platform_b"}, `error: pins platform platform_a`},
		{"browser", "status", map[string]any{}, `GET /v1/browser null`},
		{"browser.platform_d", "request", map[string]any{}, `error: unknown target`},
	}
	for _, c := range cases {
		res, err := reg.Resolve(c.target, c.tool, c.params)
		var got string
		switch {
		case err != nil:
			got = "error: " + err.Error()
		case res.Control != nil:
			got = "control " + res.Control.Op + " " + res.Control.Reason + res.Control.Mode
		default:
			b, _ := json.Marshal(res.Call.Body)
			got = res.Call.Method + " " + res.Call.Path + " " + string(b)
		}
		if strings.HasPrefix(c.want, "error: ") {
			if !strings.HasPrefix(got, "error: ") || !strings.Contains(got, strings.TrimPrefix(c.want, "error: ")) {
				t.Errorf("@%s::%s %v: got %q want %q", c.target, c.tool, c.params, got, c.want)
			}
			continue
		}
		if got != c.want {
			t.Errorf("@%s::%s %v:\n got %q\nwant %q", c.target, c.tool, c.params, got, c.want)
		}
	}
}

func TestRegistryIsOpen(t *testing.T) {
	reg := NewRegistry()
	reg.Register("ops", func(tool string, params map[string]any) (Resolved, error) {
		return Resolved{Call: &Call{Method: "GET", Path: "/v1/" + tool}}, nil
	})
	res, err := reg.Resolve("ops", "runtime", nil)
	if err != nil || res.Call.Path != "/v1/runtime" {
		t.Fatalf("%+v %v", res, err)
	}
	if !strings.Contains(strings.Join(reg.Names(), ","), "ops") {
		t.Fatal("names")
	}
}
