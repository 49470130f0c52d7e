package raftstore

import (
	"context"
	"testing"
)

func TestConversationRecordsPersistAndRecover(t *testing.T) {
	dir := t.TempDir()
	n := openTestNode(t, dir)
	ctx := context.Background()
	must := func(typ string, p any) any {
		t.Helper()
		v, err := n.Apply(ctx, typ, p)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		return v
	}
	ref := ConversationRef{Platform: "platform_a", LocalConversationID: "c1", RemoteConversationID: "r1"}
	if c := must(CmdConversationLink, ConversationLink{ConversationRef: ref, ClientID: "cl1", Title: "t"}).(Conversation); c.AutomationStatus != AutomationManual || c.ExecutionState != ExecIdle {
		t.Fatalf("new record %+v", c)
	}
	if r := must(CmdConversationMessage, ConversationMessage{ConversationRef: ref, MessageID: "m1"}).(MessageNoted); r.Repeat {
		t.Fatal("first message counted as repeat")
	}
	if r := must(CmdConversationMessage, ConversationMessage{ConversationRef: ref, MessageID: "m1"}).(MessageNoted); !r.Repeat || r.Count != 1 {
		t.Fatalf("repeat: %+v", r)
	}
	must(CmdConversationAutomate, ConversationAutomation{ConversationRef: ref, Status: AutomationAuto})
	c := must(CmdConversationAutomate, ConversationAutomation{ConversationRef: ref, Status: AutomationPaused, PauseReason: "lunch"}).(Conversation)
	if c.PauseReason != "lunch" || c.LastNonPausedAutomationStatus != AutomationAuto {
		t.Fatalf("paused: %+v", c)
	}
	must(CmdConversationExecution, ConversationExecution{ConversationRef: ref, State: ExecInstructionRunning, Failed: true, LastError: "boom"})
	for _, bad := range []struct {
		typ string
		p   any
	}{
		{CmdConversationAutomate, ConversationAutomation{ConversationRef: ref, Status: "sideways"}},
		{CmdConversationExecution, ConversationExecution{ConversationRef: ref, State: "dancing"}},
		{CmdConversationMessage, ConversationMessage{ConversationRef: ref}},
		{CmdConversationLink, ConversationLink{}},
	} {
		if _, err := n.Apply(ctx, bad.typ, bad.p); err == nil {
			t.Fatalf("%s %+v accepted", bad.typ, bad.p)
		}
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	n.Shutdown()

	n = openTestNode(t, dir)
	defer n.Shutdown()
	if err := n.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	n.Read(func(s *State) {
		c := s.Conversations.ByLocal["c1"]
		if c == nil || c.ExecutionState != ExecInstructionRunning || c.ConsecutiveFailureCount != 1 || c.RepeatedMessageCount != 1 || c.AutomationStatus != AutomationPaused || c.ClientID != "cl1" {
			t.Fatalf("after restart: %+v", c)
		}
	})
	if v, err := n.Apply(ctx, CmdConversationRecover, struct{}{}); err != nil || v.(int) != 1 {
		t.Fatalf("recover: %v %v", v, err)
	}
	c = must(CmdConversationResume, ref).(Conversation)
	if c.AutomationStatus != AutomationAuto || c.PauseReason != "" || c.ExecutionState != ExecIdle {
		t.Fatalf("resumed: %+v", c)
	}
	// Old message ids fall out of the bounded window.
	for i := 0; i < MaxSeenMessageIDs+5; i++ {
		must(CmdConversationMessage, ConversationMessage{ConversationRef: ref, MessageID: "x" + string(rune('a'+i%26)) + string(rune('a'+i/26))})
	}
	n.Read(func(s *State) {
		if got := len(s.Conversations.ByLocal["c1"].SeenMessageIDs); got != MaxSeenMessageIDs {
			t.Fatalf("seen ids %d, want %d", got, MaxSeenMessageIDs)
		}
	})
}
