package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/shared/bridgeproto"
)

// An HTTP ingest without the token runs what SPEC.md lets it run and records
// the task, but types nothing into the chat: otherwise any local process
// could make the user's paired extension type caller-chosen text (here a
// pause reason) into a conversation whose AI replies run host operations.
// The same ingest with the token has its report typed as before.
func TestUntokenedIngestTypesNothingIntoTheChat(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t)
	p := connectPlugin(t, d, "inject-plugin", nil)
	ref := bridgeproto.ConversationRef{Platform: "platform_a", LocalConversationID: "inj-1", RemoteConversationID: "r-inj-1"}
	send(t, p, bridgeproto.ConversationLink{Type: bridgeproto.TypeConversationLink, ConversationRef: ref})
	waitUntil(t, 5*time.Second, "the link", func() bool { return d.Do("GET", "/v1/renewal/conversations/inj-1", nil).Status == 200 })

	const chosen = "TYPE THIS INTO THE CHAT"
	ingest := func(msgID string, auth bool) map[string]any {
		body := map[string]any{"platform": "platform_a", "local_conversation_id": "inj-1", "remote_conversation_id": "r-inj-1",
			"message_id": msgID, "text": "```instr\n@svc::conversation/pause::{\"reason\":\"" + chosen + "\"}\n```"}
		do := d.Do
		if auth {
			do = d.DoAuth
		}
		r := do("POST", "/v1/instructions/ingest", body)
		if r.Status != 200 {
			t.Fatalf("ingest %s: %d %s", msgID, r.Status, r.Body)
		}
		ing, _ := r.JSON(t)["data"].(map[string]any)["ingest"].(map[string]any)
		return ing
	}

	ing := ingest("m-untokened", false)
	if ing["status"] != "executed" || ing["task_id"] == "" {
		t.Fatalf("the batch did not run: %v", ing)
	}
	if s, _ := ing["not_injected"].(string); !strings.Contains(s, "without the shared token") {
		t.Fatalf("the answer does not say why nothing was typed: %v", ing)
	}
	if _, ok := ing["inject_id"]; ok {
		t.Fatalf("an inject id without an injection: %v", ing)
	}
	if got := convOf(t, d, "inj-1")["automation_status"]; got != "paused" {
		t.Fatalf("the conversation instruction did not run: automation_status %v", got)
	}
	// Nothing reached the plugin, now or a little later.
	time.Sleep(300 * time.Millisecond)
	if n := p.Count(bridgeproto.TypeConversationInject); n != 0 {
		t.Fatalf("%d conversation_inject frames sent for an untokened ingest", n)
	}
	logs := d.DoAuth("GET", "/v1/tasks/"+ing["task_id"].(string)+"/logs", nil)
	if !strings.Contains(string(logs.Body), "report not typed into the chat") {
		t.Fatalf("the task log does not say the report was not typed: %s", logs.Body)
	}

	// With the token: the report is typed back to the plugin that holds it.
	ing = ingest("m-tokened", true)
	if ing["status"] != "executed" || ing["not_injected"] != nil {
		t.Fatalf("tokened ingest: %v", ing)
	}
	m, err := p.WaitFor(5*time.Second, bridgeproto.TypeConversationInject, nil)
	if err != nil {
		t.Fatalf("no report typed for a tokened ingest: %v", err)
	}
	var in bridgeproto.ConversationInject
	if err := m.Decode(&in); err != nil || in.LocalConversationID != "inj-1" || in.Kind != "instruction_report" {
		t.Fatalf("inject = %+v (%v)", in, err)
	}
}
