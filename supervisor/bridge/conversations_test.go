package bridge

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// readType reads frames until one of type typ arrives (snapshots and
// keepalives in between are skipped).
func readType(t *testing.T, ws *websocket.Conn, typ string) map[string]any {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := 0; i < 50; i++ {
		var m map[string]any
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		if m["type"] == typ {
			return m
		}
	}
	t.Fatalf("no %s in 50 frames", typ)
	return nil
}

// TestConversationMessageIngestAndInjectRoundTrip: a conversation_message
// reaches the hook off the reader goroutine, the hook injects back into the
// same conversation, and the plugin's inject_result answers it.
func TestConversationMessageIngestAndInjectRoundTrip(t *testing.T) {
	h, url := startTestHub(t, Config{ActionTimeout: 5 * time.Second})
	type outcome struct {
		client string
		res    *bridgeproto.InjectResult
		err    error
	}
	got := make(chan outcome, 1)
	h.OnConversationMessage(func(ctx context.Context, clientID string, m *bridgeproto.ConversationMessage) {
		res, err := h.Inject(ctx, bridgeproto.ConversationInject{Platform: m.Platform, LocalConversationID: m.LocalConversationID,
			RemoteConversationID: m.RemoteConversationID, Kind: bridgeproto.InjectInstructionReport, Text: "report for " + m.MessageID})
		got <- outcome{clientID, res, err}
	})
	ws, err := pairClient(t, url, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteJSON(bridgeproto.ConversationMessage{Type: bridgeproto.TypeConversationMessage, Platform: bridgeproto.PlatformA,
		LocalConversationID: "conv-1", RemoteConversationID: "r1", MessageID: "m1", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	inj := readType(t, ws, bridgeproto.TypeConversationInject)
	if inj["text"] != "report for m1" || inj["kind"] != "instruction_report" || inj["local_conversation_id"] != "conv-1" {
		t.Fatalf("inject frame: %v", inj)
	}
	id, _ := inj["inject_id"].(string)
	if err := ws.WriteJSON(bridgeproto.InjectResult{Type: bridgeproto.TypeInjectResult, InjectID: id, OK: true,
		DeliveryAck: &bridgeproto.DeliveryAck{Level: 1, StatusCode: 200}}); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-got:
		if o.err != nil || o.client != "c1" || !o.res.OK || o.res.DeliveryAck.StatusCode != 200 {
			t.Fatalf("outcome: %+v err=%v", o.res, o.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("hook never finished")
	}

	// A late or foreign inject_result is refused by an error frame.
	if err := ws.WriteJSON(bridgeproto.InjectResult{Type: bridgeproto.TypeInjectResult, InjectID: id, OK: true,
		DeliveryAck: &bridgeproto.DeliveryAck{Level: 0}}); err != nil {
		t.Fatal(err)
	}
	if e := readType(t, ws, bridgeproto.TypeError); e["code"] != "unknown_request" {
		t.Fatalf("late inject_result: %v", e)
	}
	// A bad conversation id is refused naming the field.
	raw, _ := json.Marshal(map[string]any{"type": "conversation_link", "platform": "platform_a", "local_conversation_id": "a b", "remote_conversation_id": "r"})
	if err := ws.WriteMessage(websocket.TextMessage, raw); err != nil {
		t.Fatal(err)
	}
	if e := readType(t, ws, bridgeproto.TypeError); e["code"] != "invalid_field" {
		t.Fatalf("bad link: %v", e)
	}
}

// TestConversationLinkNewestConnectionWins: a second client linking the
// same conversation takes it over; injection then goes to it.
func TestConversationLinkNewestConnectionWins(t *testing.T) {
	h, url := startTestHub(t, Config{ActionTimeout: 5 * time.Second})
	links := make(chan string, 4)
	h.OnConversationLink(func(_ context.Context, clientID string, _ bridgeproto.ConversationLink) { links <- clientID })
	link := bridgeproto.ConversationLink{Type: bridgeproto.TypeConversationLink, Platform: bridgeproto.PlatformB,
		LocalConversationID: "conv-2", RemoteConversationID: "r2", Title: "t"}
	ws1, err := pairClient(t, url, "c1")
	if err != nil {
		t.Fatal(err)
	}
	ws2, err := pairClient(t, url, "c2")
	if err != nil {
		t.Fatal(err)
	}
	for i, ws := range []*websocket.Conn{ws1, ws2} {
		if err := ws.WriteJSON(link); err != nil {
			t.Fatal(err)
		}
		want := []string{"c1", "c2"}[i]
		select {
		case c := <-links:
			if c != want {
				t.Fatalf("link hook told %s, want %s", c, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("link hook not called")
		}
	}
	if c, l, ok := h.ConversationHolder("conv-2"); !ok || c != "c2" || l.Title != "t" {
		t.Fatalf("holder %s %+v %v", c, l, ok)
	}
	done := make(chan error, 1)
	go func() {
		res, err := h.Inject(context.Background(), bridgeproto.ConversationInject{Platform: bridgeproto.PlatformB, LocalConversationID: "conv-2",
			RemoteConversationID: "r2", Kind: bridgeproto.InjectRenewal, Text: "continue"})
		if err == nil && (res.OK || res.Error.Code != "no_input_box") {
			t.Errorf("result %+v", res)
		}
		done <- err
	}()
	inj := readType(t, ws2, bridgeproto.TypeConversationInject)
	_ = ws2.WriteJSON(bridgeproto.InjectResult{Type: bridgeproto.TypeInjectResult, InjectID: inj["inject_id"].(string),
		Error: &bridgeproto.ErrorBody{Code: "no_input_box", Message: "input box not found"}})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := h.Inject(context.Background(), bridgeproto.ConversationInject{Platform: bridgeproto.PlatformB, LocalConversationID: "nobody",
		RemoteConversationID: "r", Kind: bridgeproto.InjectRenewal, Text: "x"}); err == nil {
		t.Fatal("inject into an unlinked conversation succeeded")
	}
}
