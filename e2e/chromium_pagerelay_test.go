package e2e

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// TestExtensionPageRelayUpgrade: a page that still holds an older page
// relay (mark '1': it talked to the content script by window.postMessage,
// before the CustomEvents of wave 6) gets the current relay at its next
// relay, and the relay answers. The content script hangs up on any mark but
// its own version's, and the worker's retry injects page-relay.js.
func TestExtensionPageRelayUpgrade(t *testing.T) {
	b := startBrowser(t)
	d := extensionDaemon(t)
	site := newFakeSite("platform_a", "CANARYu1")
	defer site.Close()
	sw := b.worker()
	configure(t, b, sw, d, map[string]string{"platform_a": site.URL})
	waitUntil(t, 15*time.Second, "the extension connected", func() bool { return extConnected(t, d, "chromium-e2e") })
	// Registered for the configured origin (the worker registers again when
	// the origins change): only then is it taken away for good.
	// The site's own origin with its port (issue 36): not every loopback page.
	waitUntil(t, 15*time.Second, "the page relay registered for the site", func() bool {
		var ok bool
		_ = b.eval(sw, fmt.Sprintf(`chrome.scripting.getRegisteredContentScripts({ids: ['svcd-page-relay']}).then((l) => l.length === 1 && l[0].matches.includes(%q))`, site.URL+"/*"), &ok)
		return ok
	})
	// The capture is the page relay's (issue 36): taken with the current
	// relay, before it goes.
	b.openTab(site.URL + "/")
	waitUntil(t, 15*time.Second, "the tab's capture", func() bool { return len(readModel(t, d, "?platform=platform_a").Records) > 0 })
	tab := b.attach(b.waitTarget("page", site.URL, 10*time.Second).TargetID)
	// No registered relay from here on: the reloaded page gets only the
	// stand-in of an older one below, as a page open before an update.
	if err := b.eval(sw, `chrome.scripting.unregisterContentScripts({ids: ['svcd-page-relay']}).then(() => true)`, nil); err != nil {
		t.Fatal(err)
	}
	reloadAndWait(t, b, tab)
	if _, rl := pageMarks(b, tab); rl {
		t.Fatal("the reloaded page holds the current relay: the check below would see nothing")
	}
	// The older relay's traces: its guard and its mark.
	if err := b.eval(tab, `window.__svcdPageRelay = true; document.documentElement.dataset.svcdPageRelay = '1'; true`, nil); err != nil {
		t.Fatal(err)
	}

	r := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_a", "clientId": "chromium-e2e", "method": "POST",
		"path": "/api/complete", "body": map[string]any{}, "timeoutMs": 10000})
	if r.Status != 200 || !bytes.Contains(r.Body, []byte("hello from platform_a")) {
		t.Fatalf("relay through a page with an older relay: %d %s", r.Status, r.Body)
	}
	var mark string
	if err := b.eval(tab, `document.documentElement.dataset.svcdPageRelay`, &mark); err != nil {
		t.Fatal(err)
	}
	if mark != "2" {
		t.Fatalf("page relay mark after the relay: %q, want the current relay's '2'", mark)
	}
}
