package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestExtensionPairsWithCode: the real extension in Chromium against the
// daemon's default browser_pairing = "codes" (issue 25 §1). An expired code
// typed into the options page is refused with a message the popup shows; a
// fresh code pairs, the worker keeps the credential instead, and that
// credential opens no HTTP route; an exec block from its conversation
// fails with the scope error until host-ops is granted, then runs; revoke
// closes the connection (4401) and the popup says so; the used code typed
// again is refused as already used.
func TestExtensionPairsWithCode(t *testing.T) {
	b := startBrowser(t)
	d := extensionDaemon(t, "SVC_BROWSER_PAIRING=codes")
	site := newFakeSite("platform_a", "CANARYp41r")
	defer site.Close()
	sw := b.worker()
	js := fmt.Sprintf(`chrome.storage.local.set({daemonURL:%q, clientId:"chromium-pair", origins:{"platform_a":%q}}).then(()=>true)`, wsURL(d), site.URL)
	if err := b.eval(sw, js, nil); err != nil {
		t.Fatal(err)
	}
	openPage := func(name string) string {
		t.Helper()
		url := "chrome-extension://" + extensionID + "/" + name
		if err := b.call("", "Target.createTarget", map[string]any{"url": url}, nil); err != nil {
			t.Fatal(err)
		}
		return b.attach(b.waitTarget("page", url, 10*time.Second).TargetID)
	}
	opt := openPage("options.html")
	popup := openPage("popup.html")
	enterCode := func(code string) {
		t.Helper()
		// The page's script is up (it wrote the pairing line) before the
		// click, or the click would submit the bare form.
		waitUntil(t, 10*time.Second, "the options page ready", func() bool {
			var v string
			_ = b.eval(opt, `document.getElementById('pairing').textContent`, &v)
			return v != ""
		})
		if err := b.eval(opt, fmt.Sprintf(`document.getElementById('code').value=%q, document.querySelector('button').click(), true`, code), nil); err != nil {
			t.Fatal(err)
		}
	}
	popupShows := func(what string, want ...string) {
		t.Helper()
		var text string
		defer func() {
			if t.Failed() {
				var st, saved any
				_ = b.eval(sw, `chrome.storage.session.get('status').then(s=>s.status)`, &st)
				_ = b.eval(sw, `chrome.storage.local.get(null).then(s=>Object.keys(s))`, &saved)
				t.Logf("popup: %q\nstatus: %v\nstored keys: %v\ndaemon log tail: %s", text, st, saved, tail(d.Logs(), 3000))
			}
		}()
		waitUntil(t, 15*time.Second, "the popup showing "+what, func() bool {
			_ = b.eval(popup, "document.body.innerText", &text)
			for _, w := range want {
				if !strings.Contains(text, w) {
					return false
				}
			}
			return true
		})
	}
	stored := func(key string) string {
		var v string
		_ = b.eval(sw, fmt.Sprintf(`chrome.storage.local.get(%q).then(s=>s[%q]||'')`, key, key), &v)
		return v
	}

	expired := issueCode(t, d, map[string]any{"ttl": "200ms"})
	time.Sleep(400 * time.Millisecond)
	enterCode(expired)
	popupShows("the expired code", "Disconnected", "pairing code expired")

	code := issueCode(t, d, nil)
	enterCode(code)
	waitUntil(t, 15*time.Second, "the extension paired with the code", func() bool { return extConnected(t, d, "chromium-pair") })
	var cred string
	waitUntil(t, 5*time.Second, "the credential stored instead of the code", func() bool {
		cred = stored("credential")
		return strings.HasPrefix(cred, "svcb_") && stored("pairingCode") == "" && stored("token") == ""
	})
	if r := d.Do("POST", "/v1/exec", map[string]any{"command": "true"}, "Authorization: Bearer "+cred); r.Status != 401 {
		t.Fatalf("the credential on /v1/exec: %d %s", r.Status, r.Body)
	}
	popupShows("the connection and its scope", "Connected", "Scopes: bridge")
	var summary string
	_ = b.eval(opt, `document.getElementById('pairing').textContent`, &summary)
	if !strings.Contains(summary, "paired") || strings.Contains(summary, cred) {
		t.Fatalf("options page pairing line: %q", summary)
	}

	// Scope: an exec block from this client's conversation fails with the
	// scope error in the typed report until host-ops is granted.
	reportIn := func(conv string, want ...string) string {
		t.Helper()
		var got string
		waitUntil(t, 30*time.Second, "the report in "+conv, func() bool {
			for _, m := range site.sentIn(conv) {
				if strings.Contains(m, "[instr-result]") {
					got = m
					return true
				}
			}
			return false
		})
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Fatalf("report in %s lacks %q:\n%s", conv, w, got)
			}
		}
		return got
	}
	b.openTab(site.URL + "/c/exec-1")
	if got := reportIn("exec-1", "失败", "host-ops"); strings.Contains(got, "paired-exec-ok\n") {
		t.Fatalf("the exec ran without host-ops:\n%s", got)
	}
	if r := d.DoAuth("POST", "/v1/browser/clients/chromium-pair/scopes", map[string]any{"scope": "host-ops", "grant": true}); r.Status != 200 {
		t.Fatalf("grant: %d %s", r.Status, r.Body)
	}
	b.openTab(site.URL + "/c/exec-2")
	reportIn("exec-2", "成功", "paired-exec-ok")

	// Revoke: the daemon closes the connection with 4401; the worker
	// drops the credential and the popup says why.
	if r := d.DoAuth("POST", "/v1/browser/clients/chromium-pair/revoke", nil); r.Status != 200 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	waitUntil(t, 10*time.Second, "the revoked client gone", func() bool { return !extConnected(t, d, "chromium-pair") })
	popupShows("the revocation", "Disconnected", "revoked")
	waitUntil(t, 5*time.Second, "the revoked credential dropped", func() bool { return stored("credential") == "" })

	// The used code again: refused as already used.
	enterCode(code)
	popupShows("the reused code", "already used")
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
