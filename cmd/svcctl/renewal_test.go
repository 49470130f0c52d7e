package main

import (
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

func TestRenewalTasksControllersCommands(t *testing.T) {
	d := harness.Start(t, harness.Options{})
	// A conversation exists once a message for it was ingested.
	if r := d.Do("POST", "/v1/instructions/ingest", map[string]string{"platform": "platform_a", "local_conversation_id": "cli-1",
		"remote_conversation_id": "r", "message_id": "m1", "text": "```instr\n@svc::status\n```"}); r.Status != 200 {
		t.Fatalf("ingest: %d %s", r.Status, r.Body)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"renewal", "ls"}, `"local_conversation_id": "cli-1"`},
		{[]string{"renewal", "auto", "cli-1"}, `"automation_status": "auto"`},
		{[]string{"renewal", "pause", "cli-1", "for", "lunch"}, `"pause_reason": "for lunch"`},
		{[]string{"renewal", "get", "cli-1"}, `"last_non_paused_automation_status": "auto"`},
		{[]string{"renewal", "manual", "cli-1"}, `"automation_status": "manual"`},
		{[]string{"renewal", "jobs", "cli-1"}, `"jobs": []`},
		{[]string{"renewal", "scheduler"}, `"ticks"`},
		{[]string{"tasks", "ls", "succeeded"}, `"kind": "instruction_batch"`},
		{[]string{"controllers"}, `"node_id": "node1"`},
	} {
		code, out, errOut := svcctlJSON(t, d, c.args...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Fatalf("svcctl %v: exit %d\n%s\n%s", c.args, code, out, errOut)
		}
	}
	code, out, _ := svcctlJSON(t, d, "tasks", "get", "task-1")
	if code != 0 || !strings.Contains(out, `"run_id": "run-1-1"`) {
		t.Fatalf("tasks get: %d %s", code, out)
	}
	if code, out, _ := svcctlJSON(t, d, "tasks", "logs", "task-1"); code != 0 || !strings.Contains(out, `"lines"`) {
		t.Fatalf("tasks logs: %d %s", code, out)
	}
	if code, _, _ := svcctlJSON(t, d, "renewal", "get", "nope"); code != 1 {
		t.Fatalf("unknown conversation: exit %d", code)
	}
	if code, _, _ := svcctlJSON(t, d, "renewal", "explode"); code != 2 {
		t.Fatalf("bad usage: exit %d", code)
	}
}
