package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// allURLsManifest is the manifest as it was before issue 36 (required
// <all_urls>, the content script declared for every page), with an older
// version number.
func allURLsManifest(t *testing.T, current string) string {
	t.Helper()
	const now = `"host_permissions": ["http://127.0.0.1/*"],
  "optional_host_permissions": ["*://*/*"],`
	// Before issue 36's second half, webRequest was required too.
	const perms = `"permissions": ["storage", "tabs", "scripting", "alarms", "cookies"],
  "optional_permissions": ["webRequest"],`
	if !strings.Contains(current, now) || !strings.Contains(current, perms) || !strings.Contains(current, `"version": "0.1.0"`) {
		t.Fatal("the manifest changed: update allURLsManifest")
	}
	current = strings.Replace(current, perms, `"permissions": ["storage", "tabs", "scripting", "alarms", "webRequest", "cookies"],`, 1)
	old := strings.Replace(current, now, `"host_permissions": ["<all_urls>"],
  "content_scripts": [{ "matches": ["<all_urls>"], "js": ["lib/pagerules.js", "content.js"], "run_at": "document_idle" }],`, 1)
	return strings.Replace(old, `"version": "0.1.0"`, `"version": "0.0.9"`, 1)
}

// TestExtensionUpdateFromAllURLs (issue 36): an install of the version that
// held <all_urls>, configured for a platform on a site the new manifest does
// not ask for (http://localhost:PORT), is updated in place to this version
// (DevTools Extensions.loadUnpacked of the same directory, now holding the
// new manifest: Chrome treats it as an update, onInstalled reason
// "update"). Chrome keeps the old grant, so the configured platform keeps
// working with no prompt: the new worker registers the scripts for it, its
// page gets them, its capture and relays work; the options page says the
// install still holds every site and offers to narrow it.
func TestExtensionUpdateFromAllURLs(t *testing.T) {
	current, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "extension", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := extensionDir(t, func(m string) string { return allURLsManifest(t, m) })
	mf := filepath.Join(dir, "manifest.json")
	b := startBrowserWith(t, dir)
	d := extensionDaemon(t)
	site := newFakeSite("platform_a", "CANARYupd1")
	defer site.Close()
	origin := strings.Replace(site.URL, "127.0.0.1", "localhost", 1)
	sw := b.worker()
	configure(t, b, sw, d, map[string]string{"platform_a": origin})
	waitUntil(t, 15*time.Second, "the old version connected", func() bool { return extConnected(t, d, "chromium-e2e") })

	// The update.
	if err := os.WriteFile(mf, current, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.call("", "Extensions.loadUnpacked", map[string]any{"path": dir}, nil); err != nil {
		t.Fatal(err)
	}
	nsw := workerOfVersion(t, b, "0.1.0")
	waitUntil(t, 20*time.Second, "the new version connected", func() bool { return extConnected(t, d, "chromium-e2e") })
	// Chrome keeps the old grant as the optional *://*/* it falls under:
	// every platform origin is granted, the configured one among them.
	waitUntil(t, 15*time.Second, "the scripts registered for the configured site", func() bool { return scriptsCover(b, nsw, false, origin+"/*") })

	// The webRequest the old version required is given back (Chrome would
	// keep it as the optional permission it is now, and with it the cost
	// to every page): the capture is the page-side one.
	waitUntil(t, 15*time.Second, "the inherited webRequest given back", func() bool {
		var held bool
		return b.eval(nsw, `chrome.permissions.contains({permissions: ['webRequest']})`, &held) == nil && !held
	})

	// The configured platform works as before: its page, its capture, a relay.
	b.openTab(origin + "/")
	tab := b.attach(b.waitTarget("page", origin, 10*time.Second).TargetID)
	waitUntil(t, 15*time.Second, "the scripts in the platform page", func() bool { br, rl := pageMarks(b, tab); return br && rl })
	waitCaptureThenRelay(t, d, "the platform's capture", "relay after the update")

	// Nothing was left to grant again, and the options page offers to narrow
	// the old grant.
	var regrant []string
	_ = b.eval(nsw, `chrome.storage.local.get('regrant').then((s) => s.regrant || [])`, &regrant)
	if len(regrant) != 0 {
		t.Fatalf("the update asks again for %v although the old grant covers them", regrant)
	}
	b.openTab("chrome-extension://" + extensionID + "/options.html")
	opt := b.attach(b.waitTarget("page", "chrome-extension://"+extensionID+"/options.html", 10*time.Second).TargetID)
	waitUntil(t, 10*time.Second, "the options page offering to narrow the old grant", func() bool {
		var shown bool
		_ = b.eval(opt, `!document.getElementById('broad').hidden && (document.querySelector('tr[data-platform="platform_a"] .access')||{}).textContent === 'granted'`, &shown)
		return shown
	})
}

// workerOfVersion waits for the extension's service worker whose manifest
// says version (the one an update started) and returns its session. A
// worker target is attached once; its version asked with a short timeout
// (a worker still starting may not answer the first ask).
func workerOfVersion(t *testing.T, b *browser, version string) string {
	t.Helper()
	var nsw string
	attached := map[string]string{}
	waitUntil(t, 30*time.Second, "the worker of version "+version, func() bool {
		for _, ti := range b.targets() {
			if ti.Type != "service_worker" || !strings.HasPrefix(ti.URL, "chrome-extension://"+extensionID+"/") {
				continue
			}
			s, ok := attached[ti.TargetID]
			if !ok {
				s = b.attach(ti.TargetID)
				attached[ti.TargetID] = s
			}
			var r struct {
				Result struct{ Value string } `json:"result"`
			}
			if b.callT(2*time.Second, s, "Runtime.evaluate", map[string]any{"expression": "chrome.runtime.getManifest().version", "returnByValue": true}, &r) == nil && r.Result.Value == version {
				nsw = s
				return true
			}
		}
		return false
	})
	return nsw
}
