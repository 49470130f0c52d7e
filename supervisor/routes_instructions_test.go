package supervisor

import (
	"context"
	"strings"
	"testing"

	"github.com/svcd/svcd/supervisor/instructions"
)

// TestIngestFromClientCarriesOnlyTheClientsScope: a bridge client without
// the host-ops scope (here one the hub does not know) has its conversation's
// host operations refused with a scope error, not run; other blocks run.
func TestIngestFromClientCarriesOnlyTheClientsScope(t *testing.T) {
	s, _ := newTestServer(t)
	msg := func(id string) instructions.Message {
		return instructions.Message{
			ConvRef:   instructions.ConvRef{Platform: "platform_a", LocalConversationID: "c1", RemoteConversationID: "r1"},
			MessageID: id, Text: "```instr\n@svc::exec::true\n```\n```instr\n@svc::status\n```",
		}
	}
	for _, id := range []string{"m1", "m2"} {
		res, err := s.ingestFromClient(context.Background(), "unknown-client", msg(id))
		if err != nil || res.Status != instructions.IngestExecuted {
			t.Fatalf("%s: %+v %v", id, res, err)
		}
		if e := res.Results[0].Error; res.Results[0].OK || e == nil || e.Code != "scope" {
			t.Fatalf("%s: exec not refused by scope: %+v", id, res.Results[0])
		}
		if !res.Results[1].OK {
			t.Fatalf("status: %+v", res.Results[1])
		}
		// No plugin holds c1: the report cannot be injected, and says why
		// (e2e/instructions_test.go covers the delivery through a plugin).
		if res.InjectID != "" || !strings.Contains(res.InjectError, "no_plugin_for_conversation") {
			t.Fatalf("injection without a plugin: id %q, error %q", res.InjectID, res.InjectError)
		}
	}
	list, _ := s.tasks.List("", 10, "")
	if len(list) != 2 || list[0].Kind != "instruction_batch" || list[0].Status != "failed" || !strings.HasPrefix(list[0].Summary, "partially_failed: ") {
		t.Fatalf("tasks: %+v", list)
	}
	logs, ok := s.tasks.Logs(list[0].ID, "", 10)
	if !ok || len(logs) != 1 || len(logs[0].Lines) != 2 {
		t.Fatalf("task logs: %+v", logs)
	}
}
