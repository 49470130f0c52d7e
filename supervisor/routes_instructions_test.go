package supervisor

import (
	"context"
	"strings"
	"testing"

	"github.com/svcd/svcd/supervisor/instructions"
)

// TestIngestFromBridgeCarriesOnlyThePairingsAuthority: a plugin connection
// paired with the shared token gets past the token check (here the hostops
// worker is not running, so 503), an unpaired one is refused with 401.
func TestIngestFromBridgeCarriesOnlyThePairingsAuthority(t *testing.T) {
	s, _ := newTestServer(t)
	msg := func(id string) instructions.Message {
		return instructions.Message{
			ConvRef:   instructions.ConvRef{Platform: "platform_a", LocalConversationID: "c1", RemoteConversationID: "r1"},
			MessageID: id, Text: "```instr\n@svc::exec::true\n```\n```instr\n@svc::status\n```",
		}
	}
	for _, tc := range []struct {
		auth   bool
		status int
	}{{false, 401}, {true, 503}} {
		res, err := s.IngestFromBridge(context.Background(), msg(strings.Repeat("x", tc.status%7+1)), tc.auth)
		if err != nil || res.Status != instructions.IngestExecuted {
			t.Fatalf("auth=%v: %+v %v", tc.auth, res, err)
		}
		if got := res.Results[0].HTTPStatus; got != tc.status || res.Results[0].OK {
			t.Fatalf("auth=%v: exec answered %d, want %d: %+v", tc.auth, got, tc.status, res.Results[0])
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
