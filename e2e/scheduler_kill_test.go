package e2e

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// SIGKILL of the daemon in the middle of a delivery: the plugin typed the
// renewal but holds its answer, the daemon dies with the job running and the
// conversation renewal_running; after the restart the conversation is idle
// again, the job is pending (never lost, never left running), and once a
// plugin holds the conversation again the same job is delivered again with
// the same delivery_key. A plugin that ignores the key types it a second
// time (at-least-once).
func TestRenewalDaemonKillMidDelivery(t *testing.T) {
	t.Parallel()
	killMidDelivery(t, "kill-1", nil)
}

// The same crash with a plugin that remembers delivery_keys: the
// redelivery is answered duplicate, nothing is typed twice, and the job is
// done, marked duplicate.
func TestRenewalDaemonKillMidDeliveryDedup(t *testing.T) {
	t.Parallel()
	killMidDelivery(t, "kill-2", fakeplugin.NewDelivered())
}

func killMidDelivery(t *testing.T, conv string, dedup *fakeplugin.Delivered) {
	d := startBrowserDaemon(t, schedEnv()...)
	var mu sync.Mutex
	typed := map[string]int{} // delivery_key -> times the text was typed
	typeIt := func(in bridgeproto.ConversationInject) {
		mu.Lock()
		defer mu.Unlock()
		typed[in.DeliveryKey]++
		dedup.Mark(in.DeliveryKey)
	}
	typedTimes := func(key string) int {
		mu.Lock()
		defer mu.Unlock()
		return typed[key]
	}
	hold := func(o *fakeplugin.Options) {
		// Typed, but the answer never goes out: the daemon dies first.
		o.OnInject = func(in bridgeproto.ConversationInject) *bridgeproto.InjectResult { typeIt(in); return nil }
		o.Dedup = dedup
	}
	p := connectPlugin(t, d, "kill-plugin", nil, hold)
	linkAndReply(t, p, conv, "k1")
	waitUntil(t, 5*time.Second, "the conversation", func() bool {
		return d.Do("GET", "/v1/renewal/conversations/"+conv, nil).Status == 200
	})
	if r := d.Do("POST", "/v1/renewal/conversations/"+conv+"/auto", nil); r.Status != 200 {
		t.Fatalf("auto: %d %s", r.Status, r.Body)
	}
	m, err := p.WaitFor(10*time.Second, bridgeproto.TypeConversationInject, func(fakeplugin.Msg) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	var first bridgeproto.ConversationInject
	if err := m.Decode(&first); err != nil || first.Kind != bridgeproto.InjectRenewal || !strings.HasPrefix(first.DeliveryKey, "renewal:job-") {
		t.Fatalf("first inject %+v (%v)", first, err)
	}
	waitUntil(t, 5*time.Second, "a running job", func() bool {
		js := jobsOf(t, d, conv).Jobs
		return len(js) == 1 && js[0].Status == "running" && convOf(t, d, conv)["execution_state"] == "renewal_running" && typedTimes(first.DeliveryKey) == 1
	})
	// Kill the daemon while the delivery is in flight; the plugin's socket
	// dies with it. (Closing the plugin first would let the daemon record the
	// delivery as failed, client_gone, before the kill.)
	d.Restart()
	p.Close()
	if err := d.WaitHealthy(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	if c := convOf(t, d, conv); c["execution_state"] != "idle" || c["automation_status"] != "auto" {
		t.Fatalf("after restart: %v", c)
	}
	js := jobsOf(t, d, conv).Jobs
	if len(js) != 1 || js[0].Status != "pending" {
		t.Fatalf("after restart want one pending job: %+v", js)
	}
	// A plugin holds the conversation again: the same job completes.
	p2 := connectPlugin(t, d, "kill-plugin", nil, func(o *fakeplugin.Options) {
		o.OnInject = func(in bridgeproto.ConversationInject) *bridgeproto.InjectResult {
			typeIt(in)
			return &bridgeproto.InjectResult{OK: true, DeliveryAck: &bridgeproto.DeliveryAck{Level: 1, StatusCode: 200}}
		}
		o.Dedup = dedup
	})
	linkAndReply(t, p2, conv, "k1")
	var done jobView
	waitUntil(t, 10*time.Second, "the job done after recovery", func() bool {
		js := jobsOf(t, d, conv).Jobs
		if len(js) == 0 {
			return false
		}
		done = js[len(js)-1]
		return done.Status == "done" && done.ID == js[0].ID
	})
	again, err := p2.WaitFor(time.Second, bridgeproto.TypeConversationInject, func(fakeplugin.Msg) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	var second bridgeproto.ConversationInject
	if err := again.Decode(&second); err != nil || second.DeliveryKey != first.DeliveryKey || second.Text != first.Text {
		t.Fatalf("redelivery %+v, want the key %s again", second, first.DeliveryKey)
	}
	want := 2 // at-least-once: typed before the crash and again after it
	if dedup != nil {
		want = 1
	}
	if n := typedTimes(first.DeliveryKey); n != want || done.Duplicate != (dedup != nil) {
		t.Fatalf("typed %d times (want %d), job duplicate=%v: %+v", n, want, done.Duplicate, done)
	}
	if dedup != nil && done.DeliveryAck != nil {
		t.Fatalf("a duplicate answer carries no delivery_ack: %+v", done.DeliveryAck)
	}
}
