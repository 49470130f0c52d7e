package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/shared/bridgeproto"
)

type convRecord struct {
	LocalConversationID           string `json:"local_conversation_id"`
	RemoteConversationID          string `json:"remote_conversation_id"`
	ClientID                      string `json:"client_id"`
	AutomationStatus              string `json:"automation_status"`
	PauseReason                   string `json:"pause_reason"`
	LastNonPausedAutomationStatus string `json:"last_non_paused_automation_status"`
	ExecutionState                string `json:"execution_state"`
	RepeatedMessageCount          int    `json:"repeated_message_count"`
}

// TestRenewalConversationsOverTheBridge drives the real binary with a fake
// plugin: a link creates the durable record and pushes a snapshot; the
// automation routes change it (and push again); a conversation_message is
// ingested, its report injected back and answered with inject_result; the
// same message_id again is a counted repeat, never run twice.
func TestRenewalConversationsOverTheBridge(t *testing.T) {
	d := startBrowserDaemon(t)
	p := connectPlugin(t, d, "renew-1", nil)
	const conv = "conv-renew.1"
	path := "/v1/renewal/conversations/" + conv
	get := func() convRecord {
		t.Helper()
		var env struct{ Data convRecord }
		r := d.Do("GET", path, nil)
		if r.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
		}
		r.Decode(t, &env)
		return env.Data
	}
	if r := d.Do("GET", path, nil); r.Status != 404 || !strings.Contains(string(r.Body), "conversation_not_found") {
		t.Fatalf("unknown conversation: %d %s", r.Status, r.Body)
	}
	_ = p.Send(bridgeproto.ConversationLink{Type: bridgeproto.TypeConversationLink, Platform: bridgeproto.PlatformA,
		LocalConversationID: conv, RemoteConversationID: "remote-1", Title: "renewal"})
	if _, err := p.WaitFor(5*time.Second, bridgeproto.TypeStateSnapshot, func(m fakeplugin.Msg) bool {
		return strings.Contains(string(m.Raw), `"local_conversation_id":"`+conv+`"`)
	}); err != nil {
		t.Fatalf("no snapshot after link: %v", err)
	}
	if c := get(); c.AutomationStatus != "manual" || c.ExecutionState != "idle" || c.ClientID != "renew-1" || c.RemoteConversationID != "remote-1" {
		t.Fatalf("linked record %+v", c)
	}

	// A final reply with an instruction block: executed, reported back by
	// conversation_inject, answered by the fake plugin.
	msg := bridgeproto.ConversationMessage{Type: bridgeproto.TypeConversationMessage, Platform: bridgeproto.PlatformA,
		LocalConversationID: conv, RemoteConversationID: "remote-1", MessageID: "msg-1", Text: "Status:\n" + block("@system::status")}
	_ = p.Send(msg)
	inj, err := p.WaitFor(10*time.Second, bridgeproto.TypeConversationInject, nil)
	if err != nil {
		t.Fatalf("no conversation_inject: %v", err)
	}
	var in bridgeproto.ConversationInject
	_ = inj.Decode(&in)
	if in.Kind != bridgeproto.InjectInstructionReport || in.LocalConversationID != conv || !strings.Contains(in.Text, "-- @system::status --") || in.InjectID == "" {
		t.Fatalf("inject %s", inj.Raw)
	}
	_ = p.Send(msg) // the same reply again: a repeat
	deadline := time.Now().Add(5 * time.Second)
	for get().RepeatedMessageCount != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("repeat not counted: %+v", get())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := p.Count(bridgeproto.TypeConversationInject); n != 1 {
		t.Fatalf("%d injections, want 1 (a repeat is never executed)", n)
	}

	// Automation routes: each write answers the record and pushes a snapshot.
	for _, step := range []struct {
		route, reason, want string
	}{{"auto", "", "auto"}, {"paused", "lunch", "paused"}, {"manual", "", "manual"}} {
		body := map[string]string{}
		if step.reason != "" {
			body["pause_reason"] = step.reason
		}
		var env struct{ Data convRecord }
		r := d.Do("POST", path+"/"+step.route, body)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", step.route, r.Status, r.Body)
		}
		r.Decode(t, &env)
		if env.Data.AutomationStatus != step.want || env.Data.PauseReason != step.reason {
			t.Fatalf("%s: %+v", step.route, env.Data)
		}
		if _, err := p.WaitFor(5*time.Second, bridgeproto.TypeStateSnapshot, func(m fakeplugin.Msg) bool {
			return strings.Contains(string(m.Raw), `"automation_status":"`+step.want+`","pause_reason":"`+step.reason+`"`)
		}); err != nil {
			t.Fatalf("no snapshot after %s: %v", step.route, err)
		}
	}
	if c := get(); c.LastNonPausedAutomationStatus != "manual" {
		t.Fatalf("last non-paused %+v", c)
	}

	// Bad input changes nothing.
	for _, bad := range []struct {
		path   string
		body   map[string]string
		status int
		code   string
	}{
		{path + "/auto", map[string]string{"pause_reason": "x"}, 422, "invalid_field"},
		{path + "/paused", map[string]string{"reason": "x"}, 422, "unknown_field"},
		{"/v1/renewal/conversations/nope/auto", map[string]string{}, 404, "conversation_not_found"},
		{"/v1/renewal/conversations/bad%20id/auto", map[string]string{}, 422, "invalid_local_conversation_id"},
	} {
		r := d.Do("POST", bad.path, bad.body)
		if r.Status != bad.status || !strings.Contains(string(r.Body), bad.code) {
			t.Fatalf("%s %v: %d %s", bad.path, bad.body, r.Status, r.Body)
		}
	}
	if c := get(); c.AutomationStatus != "manual" {
		t.Fatalf("bad input changed the record: %+v", c)
	}
	var list struct {
		Data struct{ Conversations []convRecord }
	}
	d.Do("GET", "/v1/renewal/conversations", nil).Decode(t, &list)
	if len(list.Data.Conversations) != 1 || list.Data.Conversations[0].LocalConversationID != conv {
		t.Fatalf("list %+v", list.Data)
	}
}
