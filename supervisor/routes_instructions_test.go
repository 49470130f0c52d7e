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
	}
	sent := s.instr.inject.Sent()
	if len(sent) != 2 || sent[0].Kind != "instruction_report" || sent[0].Conv.LocalConversationID != "c1" || !strings.HasPrefix(sent[0].Text, "[instr-result]") {
		t.Fatalf("injections: %+v", sent)
	}
	tasks := s.instr.tasks.List(0)
	if len(tasks) != 2 || tasks[0].Kind != "instruction_batch" || tasks[0].Status != "partially_failed" || len(tasks[0].Logs) != 2 {
		t.Fatalf("tasks: %+v", tasks)
	}
}
