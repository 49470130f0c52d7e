package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// A plugin's malformed delivery_key or duplicate in inject_result gets an
// error frame naming the inject and changes nothing: the delivery still
// waits, and the well-formed duplicate answer that follows finishes the job
// as delivered.
func TestRenewalBadDuplicateAnswers(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t, schedEnv()...)
	p := connectPlugin(t, d, "bad-dup", nil, func(o *fakeplugin.Options) {
		o.OnInject = func(bridgeproto.ConversationInject) *bridgeproto.InjectResult { return nil }
	})
	linkAndReply(t, p, "bad-1", "b1")
	waitUntil(t, 5*time.Second, "the conversation", func() bool {
		return d.Do("GET", "/v1/renewal/conversations/bad-1", nil).Status == 200
	})
	if r := d.Do("POST", "/v1/renewal/conversations/bad-1/auto", nil); r.Status != 200 {
		t.Fatalf("auto: %d %s", r.Status, r.Body)
	}
	m, err := p.WaitFor(10*time.Second, bridgeproto.TypeConversationInject, nil)
	if err != nil {
		t.Fatal(err)
	}
	var in bridgeproto.ConversationInject
	if err := m.Decode(&in); err != nil {
		t.Fatal(err)
	}
	bad := []string{
		`{"type":"inject_result","inject_id":%q,"ok":true,"duplicate":"yes"}`,
		`{"type":"inject_result","inject_id":%q,"ok":false,"duplicate":true,"error":{"code":"c","message":"m"}}`,
		`{"type":"inject_result","inject_id":%q,"ok":true,"duplicate":true,"delivery_key":"renewal job"}`,
	}
	for _, f := range bad {
		if err := p.SendRaw([]byte(fmt.Sprintf(f, in.InjectID))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitCount(5*time.Second, bridgeproto.TypeError, len(bad)); err != nil {
		t.Fatal(err)
	}
	for _, m := range p.Messages() {
		if m.Type != bridgeproto.TypeError {
			continue
		}
		var ef bridgeproto.Error
		if err := m.Decode(&ef); err != nil || ef.Code != "invalid_field" || ef.RefType != bridgeproto.TypeInjectResult {
			t.Fatalf("error frame %+v (%v)", ef, err)
		}
	}
	if js := jobsOf(t, d, "bad-1").Jobs; len(js) != 1 || js[0].Status != "running" {
		t.Fatalf("after bad answers the delivery must still wait: %+v", js)
	}
	if err := p.Send(bridgeproto.InjectResult{Type: bridgeproto.TypeInjectResult, InjectID: in.InjectID, OK: true, Duplicate: true, DeliveryKey: in.DeliveryKey}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "the job done as a duplicate", func() bool {
		js := jobsOf(t, d, "bad-1").Jobs
		return len(js) >= 1 && js[len(js)-1].Status == "done" && js[len(js)-1].Duplicate
	})
}
