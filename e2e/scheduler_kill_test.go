package e2e

import (
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// SIGKILL of the daemon in the middle of a delivery: the plugin holds the
// injection unanswered, the daemon dies with the job running and the
// conversation renewal_running; after the restart the conversation is idle
// again, the job is pending (never lost, never left running), and once a
// plugin holds the conversation again the job completes.
func TestRenewalDaemonKillMidDelivery(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t, schedEnv()...)
	hold := func(o *fakeplugin.Options) {
		o.OnInject = func(bridgeproto.ConversationInject) *bridgeproto.InjectResult { return nil }
	}
	p := connectPlugin(t, d, "kill-plugin", nil, hold)
	linkAndReply(t, p, "kill-1", "k1")
	waitUntil(t, 5*time.Second, "the conversation", func() bool {
		return d.Do("GET", "/v1/renewal/conversations/kill-1", nil).Status == 200
	})
	if r := d.Do("POST", "/v1/renewal/conversations/kill-1/auto", nil); r.Status != 200 {
		t.Fatalf("auto: %d %s", r.Status, r.Body)
	}
	if _, err := p.WaitFor(10*time.Second, bridgeproto.TypeConversationInject, func(fakeplugin.Msg) bool { return true }); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "a running job", func() bool {
		js := jobsOf(t, d, "kill-1").Jobs
		return len(js) == 1 && js[0].Status == "running" && convOf(t, d, "kill-1")["execution_state"] == "renewal_running"
	})
	// Kill the daemon while the delivery is in flight; the plugin's socket
	// dies with it. (Closing the plugin first would let the daemon record the
	// delivery as failed, client_gone, before the kill.)
	d.Restart()
	p.Close()
	if err := d.WaitHealthy(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	if c := convOf(t, d, "kill-1"); c["execution_state"] != "idle" || c["automation_status"] != "auto" {
		t.Fatalf("after restart: %v", c)
	}
	js := jobsOf(t, d, "kill-1").Jobs
	if len(js) != 1 || js[0].Status != "pending" {
		t.Fatalf("after restart want one pending job: %+v", js)
	}
	// A plugin holds the conversation again: the same job completes.
	p2 := connectPlugin(t, d, "kill-plugin", nil)
	linkAndReply(t, p2, "kill-1", "k1")
	waitUntil(t, 10*time.Second, "the job done after recovery", func() bool {
		js := jobsOf(t, d, "kill-1").Jobs
		return len(js) >= 1 && js[len(js)-1].Status == "done" && js[len(js)-1].ID == js[0].ID
	})
}
