package bridge

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// Inject sends a valid delivery_key as is and hands back the plugin's
// duplicate answer; a key outside the protocol's rule is never sent.
func TestInjectDeliveryKey(t *testing.T) {
	h, url := startTestHub(t, Config{ActionTimeout: 5 * time.Second})
	ws, err := pairClient(t, url, "c1")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; h.conn("c1") == nil; i++ {
		if i > 500 {
			t.Fatal("the client never registered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ref := bridgeproto.ConversationRef{Platform: "platform_a", LocalConversationID: "conv-1", RemoteConversationID: "r1"}

	_, err = h.Inject(context.Background(), "c1", bridgeproto.ConversationInject{ConversationRef: ref, Kind: bridgeproto.InjectRenewal, Text: "go on", DeliveryKey: "renewal job 1"})
	if ae := api.AsError(err); ae == nil || ae.Code != "invalid_delivery_key" {
		t.Fatalf("invalid key: %v", err)
	}

	done := make(chan *bridgeproto.InjectResult, 1)
	go func() {
		res, err := h.Inject(context.Background(), "c1", bridgeproto.ConversationInject{ConversationRef: ref, Kind: bridgeproto.InjectRenewal, Text: "go on", DeliveryKey: "renewal:job-1.abc"})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	// The first frame after hello_ok that is an inject: the invalid one
	// above must not have been sent.
	var in bridgeproto.ConversationInject
	for in.Type != bridgeproto.TypeConversationInject {
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, raw, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		in = bridgeproto.ConversationInject{}
		_ = json.Unmarshal(raw, &in)
	}
	if in.DeliveryKey != "renewal:job-1.abc" {
		t.Fatalf("sent %+v", in)
	}
	if err := ws.WriteJSON(bridgeproto.InjectResult{Type: bridgeproto.TypeInjectResult, InjectID: in.InjectID, OK: true, Duplicate: true, DeliveryKey: in.DeliveryKey}); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res == nil || !res.OK || !res.Duplicate {
		t.Fatalf("answer %+v", res)
	}
}
