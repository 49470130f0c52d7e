package e2e

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// A plugin's report of its instruction client loop (conversation_loop) is
// kept in the conversation record as client_loop, durably (it survives a
// restart) and logged when the loop stopped; a malformed report gets an
// error frame and changes nothing; a report for a conversation never linked
// is not kept.
func TestClientLoopReportIsKept(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t)
	p := connectPlugin(t, d, "loop-plugin", nil)
	ref := bridgeproto.ConversationRef{Platform: "platform_a", LocalConversationID: "loop-1", RemoteConversationID: "r-loop-1"}
	send(t, p, bridgeproto.ConversationLink{Type: bridgeproto.TypeConversationLink, ConversationRef: ref})
	waitUntil(t, 5*time.Second, "the link", func() bool { return d.Do("GET", "/v1/renewal/conversations/loop-1", nil).Status == 200 })
	if _, ok := convOf(t, d, "loop-1")["client_loop"]; ok {
		t.Fatal("client_loop before any report")
	}

	loopOf := func() map[string]any {
		l, _ := convOf(t, d, "loop-1")["client_loop"].(map[string]any)
		return l
	}
	send(t, p, bridgeproto.ConversationLoop{Type: bridgeproto.TypeConversationLoop, ConversationRef: ref, State: bridgeproto.LoopRunning, Rounds: 2, MaxRounds: 3})
	waitUntil(t, 5*time.Second, "the running loop", func() bool { l := loopOf(); return l != nil && l["rounds"] == 2.0 })
	send(t, p, bridgeproto.ConversationLoop{Type: bridgeproto.TypeConversationLoop, ConversationRef: ref, State: bridgeproto.LoopStopped, Reason: "round limit reached", Rounds: 3, MaxRounds: 3})
	waitUntil(t, 5*time.Second, "the stopped loop", func() bool { l := loopOf(); return l != nil && l["state"] == "stopped" })
	l := loopOf()
	if l["reason"] != "round limit reached" || l["rounds"] != 3.0 || l["max_rounds"] != 3.0 || l["client_id"] != "loop-plugin" || l["reported_at"] == "" {
		t.Fatalf("client_loop = %v", l)
	}
	if !d.WaitLog("client loop stopped by the plugin", 5*time.Second) || !strings.Contains(grepLines(d.Logs(), "client loop stopped by the plugin"), "round limit reached") {
		t.Fatalf("no log of the stop:\n%s", grepLines(d.Logs(), "loop-1"))
	}
	// The status panel and its JSON say so too.
	if r := d.Do("GET", "/v1/status/ui", nil); r.Status != 200 || !strings.Contains(string(r.Body), "loop stopped: round limit reached (3/3)") {
		t.Fatalf("status panel: %d %s", r.Status, grepLines(string(r.Body), "loop-1"))
	}
	if r := d.Do("GET", "/v1/status", nil); !strings.Contains(string(r.Body), `"client_loop":"stopped: round limit reached (3/3)"`) {
		t.Fatalf("status JSON: %s", r.Body)
	}

	// Malformed: an error frame naming the field, the record unchanged.
	for _, bad := range []bridgeproto.ConversationLoop{
		{Type: bridgeproto.TypeConversationLoop, ConversationRef: ref, State: "paused"},
		{Type: bridgeproto.TypeConversationLoop, ConversationRef: ref, State: bridgeproto.LoopRunning, Rounds: -1},
		{Type: bridgeproto.TypeConversationLoop, ConversationRef: ref, State: bridgeproto.LoopStopped, Reason: "line\nbreak"},
		{Type: bridgeproto.TypeConversationLoop, ConversationRef: ref},
	} {
		before := p.Count(bridgeproto.TypeError)
		send(t, p, bad)
		if _, err := p.WaitFor(5*time.Second, bridgeproto.TypeError, func(m fakeplugin.Msg) bool {
			return p.Count(bridgeproto.TypeError) > before && bytes.Contains(m.Raw, []byte("conversation_loop"))
		}); err != nil {
			t.Fatalf("no error frame for %+v: %v", bad, err)
		}
	}
	if got := loopOf(); got["state"] != "stopped" || got["rounds"] != 3.0 {
		t.Fatalf("a refused report changed client_loop: %v", got)
	}

	// Never linked: not kept, no record appears.
	other := bridgeproto.ConversationRef{Platform: "platform_a", LocalConversationID: "loop-unlinked", RemoteConversationID: "r-x"}
	send(t, p, bridgeproto.ConversationLoop{Type: bridgeproto.TypeConversationLoop, ConversationRef: other, State: bridgeproto.LoopStopped, Reason: "user typing"})
	waitUntil(t, 5*time.Second, "the refusal in the log", func() bool {
		return strings.Contains(grepLines(d.Logs(), "could not record a client loop"), "loop-unlinked")
	})
	if r := d.Do("GET", "/v1/renewal/conversations/loop-unlinked", nil); r.Status != 404 {
		t.Fatalf("an unlinked conversation appeared: %d %s", r.Status, r.Body)
	}

	// Durable: the record survives a restart.
	p.Close()
	d.Restart()
	if err := d.WaitHealthy(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := loopOf(); got["state"] != "stopped" || got["reason"] != "round limit reached" {
		t.Fatalf("after a restart client_loop = %v", got)
	}
}
