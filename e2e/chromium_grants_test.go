package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// siteAccessExtension is a copy of the extension whose manifest also lists
// http://localhost/* among its host permissions, so Chrome's own site
// access controls can take that grant away and give it back. The grant of
// the options page (chrome.permissions.request) needs a user to accept
// Chrome's prompt, and headless Chromium offers no switch that accepts it:
// the request stays pending (tried on Chromium 156). The site access
// controls change the same thing the prompt changes, the extension's
// granted host permissions (chrome.permissions.getAll); everything the
// extension registers follows from those alone.
func siteAccessExtension(t *testing.T) string {
	t.Helper()
	return extensionDir(t, func(m string) string {
		const loopback = `"host_permissions": ["http://127.0.0.1/*"]`
		if !strings.Contains(m, loopback) {
			t.Fatalf("the manifest's host permissions are no longer %s", loopback)
		}
		return strings.Replace(m, loopback, `"host_permissions": ["http://127.0.0.1/*", "http://localhost/*"]`, 1)
	})
}

// siteAccess drives chrome://extensions' site access controls of the
// extension (chrome.developerPrivate, what the page's buttons call).
type siteAccess struct {
	b    *browser
	page string
}

func openSiteAccess(t *testing.T, b *browser) *siteAccess {
	t.Helper()
	if err := b.call("", "Target.createTarget", map[string]any{"url": "chrome://extensions/?id=" + extensionID}, nil); err != nil {
		t.Fatal(err)
	}
	return &siteAccess{b: b, page: b.attach(b.waitTarget("page", "chrome://extensions", 10*time.Second).TargetID)}
}

func (s *siteAccess) do(t *testing.T, call string) {
	t.Helper()
	var r string
	js := fmt.Sprintf(`chrome.developerPrivate.%s.then(() => 'ok', (e) => 'error: ' + e.message)`, strings.ReplaceAll(call, "ID", extensionID))
	waitUntil(t, 10*time.Second, "chrome://extensions: "+call, func() bool { return s.b.eval(s.page, js, &r) == nil && r == "ok" })
}

// pageMarks says what of the extension a page holds: the content script's
// mark and the page relay's (both on <html>, seen from the page's world).
func pageMarks(b *browser, tab string) (bridge, relay bool) {
	var m struct{ Bridge, Relay bool }
	_ = b.eval(tab, `({bridge: !!document.documentElement.dataset.svcdBridge, relay: !!document.documentElement.dataset.svcdPageRelay})`, &m)
	return m.Bridge, m.Relay
}

// webRequestSeen is how many times the worker's capture listener was
// called for origin (sw.js keeps the counts by origin).
func webRequestSeen(t *testing.T, b *browser, sw, origin string) int {
	var n int
	if err := b.eval(sw, fmt.Sprintf(`globalThis.svcdWebRequestSeen.get(%q) || 0`, origin), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// pageCaptureSeen is how many page-side capture messages (page-relay.js
// through the content script) the worker got from pages of origin.
func pageCaptureSeen(t *testing.T, b *browser, sw, origin string) int {
	var n int
	if err := b.eval(sw, fmt.Sprintf(`globalThis.svcdPageCaptureSeen.get(%q) || 0`, origin), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// reloadAndWait reloads a tab and returns once the new document is
// complete and its own /api/login answered (the site's page sends it at load).
func reloadAndWait(t *testing.T, b *browser, tab string) {
	t.Helper()
	_ = b.eval(tab, `window.__svcdBeforeReload = true; location.reload()`, nil)
	waitUntil(t, 15*time.Second, "the reloaded page", func() bool {
		var st string
		return b.eval(tab, `window.__svcdBeforeReload ? 'old' : document.readyState`, &st) == nil && st == "complete"
	})
}

// relayAnswer relays one buffered request to platform and returns its body.
func relayAnswer(d *harness.Daemon, platform string) (int, string) {
	r := d.Do("POST", "/v1/browser/request", map[string]any{"platform": platform, "clientId": "chromium-e2e", "method": "POST",
		"path": "/api/complete", "body": map[string]any{}, "timeoutMs": 10000})
	return r.Status, string(r.Body)
}

// TestExtensionHoldsNoAllURLs (issue 36): the extension as shipped holds,
// once installed, the daemon's loopback address and nothing else, and no
// webRequest.
func TestExtensionHoldsNoAllURLs(t *testing.T) {
	b := startBrowser(t)
	sw := b.worker()
	// The user keeps localhost from the extension (site access: on
	// specific sites, the loopback address only), as the shipped manifest
	// does by not asking for it.
	access := openSiteAccess(t, b)
	access.do(t, `updateExtensionConfiguration({extensionId: 'ID', hostAccess: 'ON_SPECIFIC_SITES'})`)
	access.do(t, `addHostPermission('ID', 'http://127.0.0.1/*')`)
	origins := func() string {
		var perms struct{ Origins []string }
		_ = b.eval(sw, `chrome.permissions.getAll()`, &perms)
		return strings.Join(perms.Origins, " ")
	}
	waitUntil(t, 10*time.Second, "only the loopback address granted", func() bool { return origins() == "http://127.0.0.1/*" })
	// Nor webRequest: held by any extension, it slows every page's requests
	// (issue 36); network capture is the user's opt-in.
	var perms struct{ Permissions []string }
	if err := b.eval(sw, `chrome.permissions.getAll()`, &perms); err != nil {
		t.Fatal(err)
	}
	var api string
	_ = b.eval(sw, `typeof chrome.webRequest`, &api)
	if strings.Contains(strings.Join(perms.Permissions, " "), "webRequest") || api != "undefined" {
		t.Fatalf("installed holding webRequest: %v (chrome.webRequest is %s)", perms.Permissions, api)
	}
	var scripts []struct{ ID string }
	if err := b.eval(sw, `chrome.scripting.getRegisteredContentScripts()`, &scripts); err != nil {
		t.Fatal(err)
	}
	if len(scripts) != 0 {
		t.Fatalf("scripts registered with no platform granted: %v", scripts)
	}
}

// TestExtensionAsksOnlyForGrantedSites (issue 36): installed, the extension
// holds no <all_urls>. A platform site
// the user has not granted (platform_a on http://localhost:PORT) gets no
// content script, no page relay and no webRequest callback, and a relay to
// it is refused at once; a granted site beside it (platform_b on
// 127.0.0.1, which the loopback grant covers) is the control that the
// scripts did have time to arrive. Granting the site in the options page
// (the prompt accepted: see docs/extension-e2e.md) makes relays and capture
// work there; removing it there stops both.
func TestExtensionAsksOnlyForGrantedSites(t *testing.T) {
	b := startBrowserWith(t, siteAccessExtension(t))
	d := extensionDaemon(t)
	siteA := newFakeSite("platform_a", "CANARYg1a")
	defer siteA.Close()
	siteB := newFakeSite("platform_b", "CANARYg1b")
	defer siteB.Close()
	originA := strings.Replace(siteA.URL, "127.0.0.1", "localhost", 1)
	sw := b.worker()

	// The user keeps localhost from the extension (site access: on
	// specific sites, the loopback address only), as the shipped manifest
	// does by not asking for it.
	access := openSiteAccess(t, b)
	access.do(t, `updateExtensionConfiguration({extensionId: 'ID', hostAccess: 'ON_SPECIFIC_SITES'})`)
	access.do(t, `addHostPermission('ID', 'http://127.0.0.1/*')`)
	origins := func() string {
		var perms struct{ Origins []string }
		_ = b.eval(sw, `chrome.permissions.getAll()`, &perms)
		return strings.Join(perms.Origins, " ")
	}
	waitUntil(t, 10*time.Second, "only the loopback address granted", func() bool { return origins() == "http://127.0.0.1/*" })

	configure(t, b, sw, d, map[string]string{"platform_a": originA, "platform_b": siteB.URL})
	waitUntil(t, 15*time.Second, "the extension connected", func() bool { return extConnected(t, d, "chromium-e2e") })

	b.openTab(originA + "/")
	tabA := b.attach(b.waitTarget("page", originA, 10*time.Second).TargetID)
	b.openTab(siteB.URL + "/")
	tabB := b.attach(b.waitTarget("page", siteB.URL, 10*time.Second).TargetID)

	t.Run("not_granted", func(t *testing.T) {
		// The control: the granted site got both scripts and its capture.
		waitUntil(t, 15*time.Second, "the content script in the granted site", func() bool { br, rl := pageMarks(b, tabB); return br && rl })
		waitUntil(t, 15*time.Second, "the granted site's capture", func() bool { return len(readModel(t, d, "?platform=platform_b").Records) > 0 })
		reloadAndWait(t, b, tabA) // loaded after the registration, for sure
		waitUntil(t, 15*time.Second, "the control page reloaded and marked again", func() bool {
			reloadAndWait(t, b, tabB)
			br, rl := pageMarks(b, tabB)
			return br && rl
		})
		if br, rl := pageMarks(b, tabA); br || rl {
			t.Fatalf("a page of a site not granted holds the content script %v / page relay %v", br, rl)
		}
		if n := webRequestSeen(t, b, sw, originA); n != 0 {
			t.Fatalf("the capture listener ran %d times for a site not granted", n)
		}
		if n := pageCaptureSeen(t, b, sw, originA); n != 0 {
			t.Fatalf("a page of a site not granted sent the worker %d capture messages", n)
		}
		if n := pageCaptureSeen(t, b, sw, siteB.URL); n == 0 {
			t.Fatal("the page-side capture never reported the granted site: the check above saw nothing")
		}
		// Nothing captured there, so the daemon has no client to relay through.
		if st, body := relayAnswer(d, "platform_a"); st == 200 || strings.Contains(body, "hello from") {
			t.Fatalf("relay to a site not granted: %d %s", st, body)
		}
		if len(readModel(t, d, "?platform=platform_a").Records) != 0 {
			t.Fatal("credentials captured on a site not granted")
		}
	})

	// The options page lists the site as not granted; Grant asks Chrome.
	if err := b.call("", "Target.createTarget", map[string]any{"url": "chrome-extension://" + extensionID + "/options.html"}, nil); err != nil {
		t.Fatal(err)
	}
	opt := b.attach(b.waitTarget("page", "chrome-extension://"+extensionID+"/options.html", 10*time.Second).TargetID)
	shown := func(platform string) string {
		var s string
		_ = b.eval(opt, fmt.Sprintf(`(document.querySelector('tr[data-platform=%q] .access')||{}).textContent||''`, platform), &s)
		return s
	}
	waitUntil(t, 10*time.Second, "the options page showing the site not granted", func() bool { return shown("platform_a") == "not granted" && shown("platform_b") == "granted" })

	t.Run("bad_origin", func(t *testing.T) {
		// A site that is no origin is refused in the page: nothing asked,
		// nothing stored.
		var before, after string
		_ = b.eval(sw, `chrome.storage.local.get('origins').then((s) => JSON.stringify(s.origins))`, &before)
		if err := b.eval(opt, `(() => { const r = document.querySelector('tr[data-platform="platform_a"]'); r.querySelector('.origin').value = 'https://chat.example.com/c/1'; r.querySelector('.grant').click(); return true; })()`, nil); err != nil {
			t.Fatal(err)
		}
		var msg string
		waitUntil(t, 5*time.Second, "the options page's refusal", func() bool {
			_ = b.eval(opt, `document.getElementById('originError').textContent`, &msg)
			return msg != ""
		})
		if !strings.Contains(msg, "an origin only") {
			t.Fatalf("refusal of a URL with a path: %q", msg)
		}
		_ = b.eval(sw, `chrome.storage.local.get('origins').then((s) => JSON.stringify(s.origins))`, &after)
		if before != after || shown("platform_a") != "not granted" {
			t.Fatalf("a refused origin changed the settings: %s -> %s", before, after)
		}
		_ = b.eval(opt, `location.reload()`, nil)
		waitUntil(t, 10*time.Second, "the options page again", func() bool { return shown("platform_a") == "not granted" })
	})

	t.Run("granted", func(t *testing.T) {
		// What the prompt's Allow does: the site granted (see siteAccessExtension).
		access.do(t, fmt.Sprintf(`addHostPermission('ID', %q)`, originA+"/*"))
		// The user back on the options page: it shows the grant, and the
		// worker registers for it.
		_ = b.eval(opt, `location.reload()`, nil)
		waitUntil(t, 15*time.Second, "the grant shown in the options page", func() bool { return shown("platform_a") == "granted" })
		waitUntil(t, 15*time.Second, "the scripts registered for the granted site", func() bool { return scriptsCover(b, sw, false, originA+"/*") })
		reloadAndWait(t, b, tabA)
		waitUntil(t, 15*time.Second, "the content script in the granted page", func() bool { br, rl := pageMarks(b, tabA); return br && rl })
		waitCaptureThenRelay(t, d, "the capture of the granted site", "relay after the grant")
	})

	t.Run("removed", func(t *testing.T) {
		access.do(t, fmt.Sprintf(`removeHostPermission('ID', %q)`, originA+"/*"))
		waitUntil(t, 15*time.Second, "the grant taken away", func() bool { return origins() == "http://127.0.0.1/*" })
		_ = b.eval(opt, `location.reload()`, nil)
		waitUntil(t, 15*time.Second, "the options page showing the site not granted again", func() bool { return shown("platform_a") == "not granted" })
		waitUntil(t, 15*time.Second, "the scripts taken away from the site", func() bool {
			var l []struct{ Matches []string }
			_ = b.eval(sw, `chrome.scripting.getRegisteredContentScripts()`, &l)
			raw, _ := json.Marshal(l)
			return len(l) > 0 && !strings.Contains(string(raw), "localhost")
		})
		seen := webRequestSeen(t, b, sw, originA)
		reported := pageCaptureSeen(t, b, sw, originA)
		reloadAndWait(t, b, tabA)
		waitUntil(t, 15*time.Second, "the control page reloaded and marked again", func() bool {
			reloadAndWait(t, b, tabB)
			br, rl := pageMarks(b, tabB)
			return br && rl
		})
		if br, rl := pageMarks(b, tabA); br || rl {
			t.Fatalf("after removal the page holds the content script %v / page relay %v", br, rl)
		}
		if n := webRequestSeen(t, b, sw, originA); n != seen {
			t.Fatalf("the capture listener ran %d more times after the removal", n-seen)
		}
		if n := pageCaptureSeen(t, b, sw, originA); n != reported {
			t.Fatalf("the page sent %d more capture messages after the removal", n-reported)
		}
		// The daemon still holds the site's credentials: the worker itself
		// refuses, at once.
		if st, body := relayAnswer(d, "platform_a"); strings.Contains(body, "hello from") || !strings.Contains(body, "origin_not_granted") {
			t.Fatalf("relay after the removal: %d %s", st, body)
		}
	})
}

// waitCaptureThenRelay waits until platform_a's credential is captured
// (what names the wait) and then relays a request through it: the page's
// grant works end to end. step names the relay in its failure.
func waitCaptureThenRelay(t *testing.T, d *harness.Daemon, what, step string) {
	t.Helper()
	waitUntil(t, 15*time.Second, what, func() bool {
		for _, r := range readModel(t, d, "?platform=platform_a").Records {
			if r.CredentialFingerprint != "" && strings.Contains(strings.Join(r.HeaderNames, ","), "x-csrf-token") {
				return true
			}
		}
		return false
	})
	if st, body := relayAnswer(d, "platform_a"); st != 200 || !strings.Contains(body, "hello from platform_a") {
		t.Fatalf("%s: %d %s", step, st, body)
	}
}
