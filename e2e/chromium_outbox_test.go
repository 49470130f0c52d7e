package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestExtensionReportsWhileDaemonDown: an AI reply with an instr block that
// the page shows while the daemon is down (here also across a restart of
// the extension's service worker) waits in the worker's outbox
// (chrome.storage.session), the popup shows it pending, and once the daemon
// is up again it is executed exactly once and its report typed back into
// the page (issue 14).
func TestExtensionReportsWhileDaemonDown(t *testing.T) {
	b := startBrowser(t)
	d := extensionDaemon(t)
	site := newFakeSite("platform_a", "CANARYd0wn")
	defer site.Close()
	sw := b.worker()
	configure(t, b, sw, d, map[string]string{"platform_a": site.URL})
	waitUntil(t, 15*time.Second, "the extension connected", func() bool { return extConnected(t, d, "chromium-e2e") })

	d.Kill()
	waitUntil(t, 15*time.Second, "the worker saw the daemon go", func() bool {
		var connected bool
		_ = b.eval(sw, `chrome.storage.session.get('status').then(s=>!!(s.status&&s.status.connected))`, &connected)
		return !connected
	})
	// The page loads with the AI's reply: its link, the reply and the loop's
	// new round are reported while nobody listens.
	b.openTab(site.URL + "/c/down1")
	waitUntil(t, 20*time.Second, "the reply waiting in the outbox", func() bool {
		var kinds []string
		_ = b.eval(sw, `chrome.storage.session.get('outbox').then(s=>(s.outbox||[]).map(m=>m.type+':'+(m.message_id||'')))`, &kinds)
		return strings.Contains(strings.Join(kinds, ","), "conversation_message:m-down1")
	})

	// The worker stops and starts again while the daemon is still down: what
	// waits lives in session storage, and the popup shows the count.
	pg := b.stopWorker(t)
	b.wakeWorker(pg)
	_ = b.eval(pg, "location.reload()", nil)
	waitUntil(t, 20*time.Second, "the popup showing the reports waiting", func() bool {
		var text string
		_ = b.eval(pg, "document.body.innerText", &text)
		return strings.Contains(text, "waiting for the daemon") && strings.Contains(text, "Disconnected")
	})

	d.Restart() // same address and data dir
	waitUntil(t, 60*time.Second, "the report typed back after the daemon came back", func() bool { return len(reports(site.sentIn("down1"))) > 0 })
	waitUntil(t, 20*time.Second, "the daemon's ingest log", func() bool { return ingests(d, "conv-down1", "executed") > 0 })
	if n := ingests(d, "conv-down1", "executed"); n != 1 {
		t.Fatalf("the reply was executed %d times", n)
	}
	if r := reports(site.sentIn("down1")); len(r) != 1 || !strings.Contains(r[0], "@svc::status") || !strings.Contains(r[0], "成功") {
		t.Fatalf("the reports typed back: %q", r)
	}
	// The loop report made while the daemon was down arrived after the link.
	conv := convOf(t, d, "conv-down1")
	if cl, _ := conv["client_loop"].(map[string]any); cl == nil || cl["state"] != "running" || cl["rounds"] != float64(1) {
		t.Fatalf("the client loop the daemon keeps: %v", conv)
	}
	t.Logf("repeated_message_count %v", conv["repeated_message_count"])
	waitUntil(t, 10*time.Second, "the popup showing nothing waiting", func() bool {
		var text string
		_ = b.eval(pg, "document.body.innerText", &text)
		return strings.Contains(text, "Connected") && !strings.Contains(text, "waiting for the daemon")
	})
}
