package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// networkModeExtension is a copy of the extension with webRequest among
// its required permissions: the state of a user who switched on
// network-level capture in the options page. That switch asks Chrome with
// chrome.permissions.request, whose prompt headless Chromium leaves pending
// (as for host permissions, siteAccessExtension), and unlike site access
// chrome://extensions has no control that grants an API permission; the
// worker takes the permission from chrome.permissions.getAll either way.
func networkModeExtension(t *testing.T) string {
	t.Helper()
	return extensionDir(t, func(s string) string {
		const optional = `"optional_permissions": ["webRequest"]`
		const required = `"permissions": ["storage", "tabs", "scripting", "alarms", "cookies"]`
		if !strings.Contains(s, optional) || !strings.Contains(s, required) {
			t.Fatalf("the manifest's permissions are no longer %s and %s", required, optional)
		}
		s = strings.Replace(s, optional+",", "", 1)
		return strings.Replace(s, required, `"permissions": ["storage", "tabs", "scripting", "alarms", "cookies", "webRequest"]`, 1)
	})
}

// configureClient is configure under another client id (two browsers on
// one daemon).
func configureClient(t *testing.T, b *browser, sw string, d *harness.Daemon, clientID string, origins map[string]string) {
	t.Helper()
	var parts []string
	for k, v := range origins {
		parts = append(parts, fmt.Sprintf("%q:%q", k, v))
	}
	js := fmt.Sprintf(`chrome.storage.local.set({daemonURL:%q, token:%q, clientId:%q, origins:{%s}}).then(()=>true)`, wsURL(d), d.Token, clientID, strings.Join(parts, ","))
	waitUntil(t, 20*time.Second, "the worker's extension APIs", func() bool {
		var ok bool
		return b.eval(sw, `typeof chrome !== 'undefined' && !!chrome.storage`, &ok) == nil && ok
	})
	if err := b.eval(sw, js, nil); err != nil {
		t.Fatal(err)
	}
}

// recordOf is client's record of platform, or a zero one.
func recordOf(t *testing.T, d *harness.Daemon, platform, client string) recordView {
	for _, r := range readModel(t, d, "?platform="+platform).Records {
		if r.ClientID == client {
			return r
		}
	}
	return recordView{}
}

// openPlatformPage opens url in b and waits for the extension's two
// scripts in it; it returns the page's session.
func openPlatformPage(t *testing.T, b *browser, url string) string {
	t.Helper()
	b.openTab(url + "/")
	tab := b.attach(b.waitTarget("page", url, 10*time.Second).TargetID)
	waitUntil(t, 15*time.Second, "the extension's scripts in the platform page", func() bool { br, rl := pageMarks(b, tab); return br && rl })
	return tab
}

// pageFetch makes one fetch of the page's own with headers (a JS object
// literal) and waits for its answer.
func pageFetch(t *testing.T, b *browser, tab, path, headers string) {
	t.Helper()
	var st int
	if err := b.eval(tab, fmt.Sprintf(`fetch(%q, {method: 'POST', headers: %s, body: '{}'}).then((r) => r.status)`, path, headers), &st); err != nil || st != 200 {
		t.Fatalf("the page's fetch of %s: %d %v", path, st, err)
	}
}

// waitHeaderName waits until client's platform_a record lists name.
func waitHeaderName(t *testing.T, d *harness.Daemon, client, name string) recordView {
	t.Helper()
	var r recordView
	waitUntil(t, 15*time.Second, "the header "+name+" in the daemon's record", func() bool {
		r = recordOf(t, d, "platform_a", client)
		return slices.Contains(r.HeaderNames, name)
	})
	return r
}

// TestExtensionPageSideCapture (issue 36): the shipped extension, holding
// no webRequest, captures a granted platform page's login from the page's
// own fetch and XMLHttpRequest calls: the daemon's record lists the names
// the page set (not the browser's own), its fingerprint is the one the
// extension computes, a page repeating one request sends the worker
// nothing after the first, a relayed request is not taken for the page's
// own, and the page's fetch still looks native.
func TestExtensionPageSideCapture(t *testing.T) {
	b := startBrowser(t)
	d := extensionDaemon(t)
	site := newFakeSite("platform_a", "CANARYpc4")
	defer site.Close()
	sw := b.worker()
	var perms struct{ Permissions []string }
	if err := b.eval(sw, `chrome.permissions.getAll()`, &perms); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(perms.Permissions, "webRequest") {
		t.Fatalf("installed with webRequest: %v", perms.Permissions)
	}
	configure(t, b, sw, d, map[string]string{"platform_a": site.URL})
	waitUntil(t, 15*time.Second, "the extension connected", func() bool { return extConnected(t, d, "chromium-e2e") })
	waitUntil(t, 15*time.Second, "the scripts registered for the site", func() bool { return scriptsCover(b, sw, false, site.URL+"/*") })
	tab := openPlatformPage(t, b, site.URL)

	// The page's load-time fetch (/api/login with authorization and
	// x-csrf-token) is captured by the page relay.
	rec := waitHeaderName(t, d, "chromium-e2e", "x-csrf-token")
	if !slices.Contains(rec.HeaderNames, "authorization") || !slices.Contains(rec.HeaderNames, "content-type") {
		t.Fatalf("header names %v", rec.HeaderNames)
	}
	if slices.Contains(rec.HeaderNames, "user-agent") {
		t.Fatalf("page-side capture listed a header the browser adds: %v", rec.HeaderNames)
	}
	// The endpoints go in a message of their own after the credentials
	// (sw.js report): the record may list the names first.
	waitUntil(t, 15*time.Second, "POST /api/login among the record's endpoints", func() bool {
		rec = recordOf(t, d, "platform_a", "chromium-e2e")
		return slices.ContainsFunc(rec.Endpoints, func(e map[string]any) bool { return e["path"] == "/api/login" && e["method"] == "POST" })
	})

	t.Run("native_looking", func(t *testing.T) {
		var r struct {
			Name, Open, Leak string
			Length           int
			Native           bool
		}
		if err := b.eval(tab, `({name: fetch.name, length: fetch.length, open: XMLHttpRequest.prototype.open.name, leak: typeof window.__svcdPageCapture, native: String(fetch).includes('[native code]')})`, &r); err != nil {
			t.Fatal(err)
		}
		if r.Name != "fetch" || r.Length != 1 || r.Open != "open" || r.Leak != "undefined" || !r.Native {
			t.Fatalf("the page sees %+v", r)
		}
	})

	t.Run("xhr", func(t *testing.T) {
		var st int
		if err := b.eval(tab, `new Promise((ok) => { const x = new XMLHttpRequest(); x.open('POST', '/api/login?next=1'); x.setRequestHeader('X-Xhr-Token', 'xv1'); x.onload = () => ok(x.status); x.send('{}'); })`, &st); err != nil || st != 200 {
			t.Fatalf("the page's XHR: %d %v", st, err)
		}
		waitHeaderName(t, d, "chromium-e2e", "x-xhr-token")
	})

	t.Run("fingerprint_is_the_extensions", func(t *testing.T) {
		var own string
		waitUntil(t, 15*time.Second, "the extension's fingerprint equal to the daemon's", func() bool {
			_ = b.eval(sw, `chrome.storage.session.get('status').then(({status}) => (status && status.captured && status.captured.platform_a && status.captured.platform_a.fingerprint) || '')`, &own)
			r := recordOf(t, d, "platform_a", "chromium-e2e")
			return own != "" && r.CredentialFingerprint == own && r.HeaderCount == len(r.HeaderNames)
		})
	})

	t.Run("once_per_new_thing", func(t *testing.T) {
		origin := site.URL
		before := pageCaptureSeen(t, b, sw, origin)
		// The load-time request again, 1000 times: nothing new in it.
		var n int
		if err := b.eval(tab, `(async () => { let ok = 0; for (let i = 0; i < 1000; i++) { const r = await fetch('/api/login', {method: 'POST', headers: {'Authorization': 'Bearer CANARYpc4-auth', 'X-Csrf-Token': 'CANARYpc4-csrf', 'Content-Type': 'application/json'}, body: '{}'}); if (r.ok) ok++; } return ok; })()`, &n); err != nil || n != 1000 {
			t.Fatalf("the page's 1000 fetches: %d ok, %v", n, err)
		}
		// Then one with a new name: once it is in the daemon, every message
		// the 1000 could have caused has arrived before it.
		pageFetch(t, b, tab, "/api/login", `{'X-Marker-One': 'm1'}`)
		waitHeaderName(t, d, "chromium-e2e", "x-marker-one")
		if got := pageCaptureSeen(t, b, sw, origin) - before; got != 1 {
			t.Fatalf("1000 same requests and one new name sent the worker %d capture messages, want 1", got)
		}
	})

	t.Run("relay_is_not_page_traffic", func(t *testing.T) {
		before := pageCaptureSeen(t, b, sw, site.URL)
		r := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_a", "clientId": "chromium-e2e", "method": "POST",
			"path": "/api/complete", "headers": map[string]string{"X-Relay-Only": "r1"}, "body": map[string]any{}, "timeoutMs": 10000})
		if r.Status != 200 || !strings.Contains(string(r.Body), "hello from platform_a") {
			t.Fatalf("relay: %d %s", r.Status, r.Body)
		}
		pageFetch(t, b, tab, "/api/login", `{'X-Marker-Two': 'm2'}`)
		rec := waitHeaderName(t, d, "chromium-e2e", "x-marker-two")
		if slices.Contains(rec.HeaderNames, "x-relay-only") {
			t.Fatalf("a relayed request was captured as the page's: %v", rec.HeaderNames)
		}
		if got := pageCaptureSeen(t, b, sw, site.URL) - before; got != 1 {
			t.Fatalf("a relay and one new name sent the worker %d capture messages, want 1", got)
		}
	})
}

// TestExtensionNetworkCaptureSameFingerprint (issue 36): with network-level
// capture on (webRequest held), the browser's own header names are
// captured too, and the fingerprint of the same login is the default
// page-side capture's: two browsers, one in each mode, log in to the same
// site with the same credentials and cookie.
func TestExtensionNetworkCaptureSameFingerprint(t *testing.T) {
	d := extensionDaemon(t)
	site := newFakeSite("platform_a", "CANARYnc5")
	defer site.Close()
	page := startBrowser(t)
	net := startBrowserWith(t, networkModeExtension(t))
	swPage, swNet := page.worker(), net.worker()
	configureClient(t, page, swPage, d, "chromium-page", map[string]string{"platform_a": site.URL})
	configureClient(t, net, swNet, d, "chromium-net", map[string]string{"platform_a": site.URL})
	var held bool
	if err := net.eval(swNet, `chrome.permissions.contains({permissions: ['webRequest']})`, &held); err != nil || !held {
		t.Fatalf("the network-mode copy holds no webRequest: %v", err)
	}
	waitUntil(t, 20*time.Second, "both browsers connected", func() bool {
		return extConnected(t, d, "chromium-page") && extConnected(t, d, "chromium-net")
	})
	// The network listener is on before the page opens (the worker adds it
	// with the registration).
	waitUntil(t, 15*time.Second, "the scripts registered in both browsers", func() bool {
		return scriptsCover(page, swPage, false, site.URL+"/*") && scriptsCover(net, swNet, false, site.URL+"/*")
	})
	tabPage := openPlatformPage(t, page, site.URL)
	tabNet := openPlatformPage(t, net, site.URL)
	waitHeaderName(t, d, "chromium-page", "x-csrf-token")
	waitHeaderName(t, d, "chromium-net", "x-csrf-token")
	// The login's cookie is set by the answer to the page's first request,
	// after that request was captured: one more request with a new name
	// (the same in both) reports the login again with its cookie.
	pageFetch(t, page, tabPage, "/api/login", `{'X-Sync': 's1'}`)
	pageFetch(t, net, tabNet, "/api/login", `{'X-Sync': 's1'}`)
	var rp, rn recordView
	waitUntil(t, 15*time.Second, "both records with the cookie and x-sync", func() bool {
		rp, rn = recordOf(t, d, "platform_a", "chromium-page"), recordOf(t, d, "platform_a", "chromium-net")
		return rp.CookieCount == 1 && rn.CookieCount == 1 && slices.Contains(rp.HeaderNames, "x-sync") && slices.Contains(rn.HeaderNames, "x-sync")
	})
	if !slices.Contains(rn.HeaderNames, "user-agent") || slices.Contains(rp.HeaderNames, "user-agent") {
		t.Fatalf("network capture should add the browser's names: network %v, page-side %v", rn.HeaderNames, rp.HeaderNames)
	}
	if len(rn.HeaderNames) <= len(rp.HeaderNames) {
		t.Fatalf("network capture saw no more names than page-side: %v vs %v", rn.HeaderNames, rp.HeaderNames)
	}
	if rp.CredentialFingerprint == "" || rp.CredentialFingerprint != rn.CredentialFingerprint {
		t.Fatalf("the same login, two fingerprints: page-side %s, network %s", rp.CredentialFingerprint, rn.CredentialFingerprint)
	}
	if n := webRequestSeen(t, net, swNet, site.URL); n == 0 {
		t.Fatal("the network-mode copy's listener never ran")
	}
	if n := webRequestSeen(t, page, swPage, site.URL); n != 0 {
		t.Fatalf("the shipped extension's webRequest listener ran %d times", n)
	}
}

// TestExtensionNetworkCaptureSwitch (issue 36): the options page's switch
// turns the network-level capture off and on again in a running worker, no
// reload. A user who switched it on under the version that required
// webRequest keeps it over the update (the worker gives an inherited grant
// back only when the user never chose it); switched off, the listener is
// gone (a reloaded platform page calls it no more, its page-side capture
// goes on); switched on again in a click, the grant (Chrome asks no second
// time for a permission it granted before) adds the listener back.
func TestExtensionNetworkCaptureSwitch(t *testing.T) {
	dir := networkModeExtension(t)
	mf := filepath.Join(dir, "manifest.json")
	withWebRequest, err := os.ReadFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "extension", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mf, []byte(strings.Replace(string(withWebRequest), `"version": "0.1.0"`, `"version": "0.0.9"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBrowserWith(t, dir)
	d := extensionDaemon(t)
	site := newFakeSite("platform_a", "CANARYsw6")
	defer site.Close()
	sw := b.worker()
	configure(t, b, sw, d, map[string]string{"platform_a": site.URL})
	// The user's choice, as the options page stores it.
	if err := b.eval(sw, `chrome.storage.local.set({networkCapture: true}).then(() => true)`, nil); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the old version connected", func() bool { return extConnected(t, d, "chromium-e2e") })

	// The update to the shipped manifest (webRequest optional).
	if err := os.WriteFile(mf, shipped, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.call("", "Extensions.loadUnpacked", map[string]any{"path": dir}, nil); err != nil {
		t.Fatal(err)
	}
	sw = workerOfVersion(t, b, "0.1.0")
	waitUntil(t, 20*time.Second, "the new version connected", func() bool { return extConnected(t, d, "chromium-e2e") })
	held := func() bool {
		var h bool
		_ = b.eval(sw, `chrome.permissions.contains({permissions: ['webRequest']})`, &h)
		return h
	}
	if !held() {
		t.Fatal("the update took back the webRequest the user had switched on")
	}
	tab := openPlatformPage(t, b, site.URL)
	waitUntil(t, 15*time.Second, "the network listener called for the platform page", func() bool { return webRequestSeen(t, b, sw, site.URL) > 0 })

	b.openTab("chrome-extension://" + extensionID + "/options.html")
	opt := b.attach(b.waitTarget("page", "chrome-extension://"+extensionID+"/options.html", 10*time.Second).TargetID)
	switchShows := func(want bool) {
		t.Helper()
		waitUntil(t, 15*time.Second, fmt.Sprintf("the switch showing %v", want), func() bool {
			var on bool
			return b.eval(opt, `document.getElementById('networkCapture').dataset.held === '1'`, &on) == nil && on == want
		})
	}
	switchShows(true)
	// A click as the user's: the permission request needs a gesture.
	click := func() {
		t.Helper()
		if err := b.call(opt, "Runtime.evaluate", map[string]any{"expression": `document.getElementById('networkCapture').click()`, "userGesture": true}, nil); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("off", func(t *testing.T) {
		click()
		switchShows(false)
		waitUntil(t, 15*time.Second, "webRequest given back", func() bool { return !held() })
		seen, reported := webRequestSeen(t, b, sw, site.URL), pageCaptureSeen(t, b, sw, site.URL)
		reloadAndWait(t, b, tab)
		// The reloaded page's capture (its load-time request, new to the
		// new page) reached the worker: so would a listener's call have.
		waitUntil(t, 15*time.Second, "the reloaded page's page-side capture", func() bool { return pageCaptureSeen(t, b, sw, site.URL) > reported })
		if n := webRequestSeen(t, b, sw, site.URL); n != seen {
			t.Fatalf("the network listener ran %d times after it was switched off", n-seen)
		}
	})

	t.Run("on_again", func(t *testing.T) {
		click()
		switchShows(true)
		if !held() {
			t.Fatal("the switch shows on, the worker holds no webRequest")
		}
		seen := webRequestSeen(t, b, sw, site.URL)
		reloadAndWait(t, b, tab)
		waitUntil(t, 15*time.Second, "the network listener called again, no reload of the extension", func() bool { return webRequestSeen(t, b, sw, site.URL) > seen })
		waitCaptureThenRelay(t, d, "the capture", "relay with network capture on")
	})
}
