package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestExtensionKeepsItsBridgeThroughAGuessFlood (issue 34 §1): the real
// extension in Chromium, paired with a code, keeps its bridge while 1,000
// wrong codes arrive from rotating 127/8 sources (a quarter of them from
// 127.0.0.1, its own address): each time the daemon drops it
// (ws_reconnect) its credential hello pairs again. A fresh code typed while
// the daemon refuses codes (the global bound, reached by the flood) is
// kept, the popup says the worker retries, and it does retry.
func TestExtensionKeepsItsBridgeThroughAGuessFlood(t *testing.T) {
	b := startBrowser(t)
	d := extensionDaemon(t, "SVC_BROWSER_PAIRING=codes")
	sw := b.worker()
	const id = "chromium-flood"
	js := fmt.Sprintf(`chrome.storage.local.set({daemonURL:%q, clientId:%q, pairingCode:%q}).then(()=>true)`, wsURL(d), id, issueCode(t, d, nil))
	if err := b.eval(sw, js, nil); err != nil {
		t.Fatal(err)
	}
	stored := func(key string) string {
		var v string
		_ = b.eval(sw, fmt.Sprintf(`chrome.storage.local.get(%q).then(s=>s[%q]||'')`, key, key), &v)
		return v
	}
	waitUntil(t, 15*time.Second, "the extension paired with the code", func() bool { return extConnected(t, d, id) })
	waitUntil(t, 5*time.Second, "the credential stored", func() bool { return strings.HasPrefix(stored("credential"), "svcb_") })
	cred := stored("credential")

	reconnect := func(round int) {
		t.Helper()
		was := session(t, d, id)
		resp := d.Do("POST", "/v1/browser/actions", map[string]any{"action": "ws_reconnect", "disconnectMs": 200, "repeatCount": 1})
		if resp.Status != 200 {
			t.Fatalf("ws_reconnect: %d %s", resp.Status, resp.Body)
		}
		waitUntil(t, 10*time.Second, "the drop of ws_reconnect", func() bool { return session(t, d, id) != was })
		deadline := time.Now().Add(15 * time.Second)
		for !extConnected(t, d, id) {
			if time.Now().After(deadline) {
				var st any
				_ = b.eval(sw, `chrome.storage.session.get('status').then(s=>s.status&&s.status.lastError)`, &st)
				t.Fatalf("round %d: the extension did not pair again within 15 s (worker: %v)\n%s", round, st, tail(grepLines(d.Logs(), "browser"), 2000))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	total := map[string]int{}
	for round := 1; round <= 2; round++ {
		for k, v := range guessFlood(t, d, 500) {
			total[k] += v
		}
		reconnect(round)
	}
	t.Logf("refusals of the 1,000 guesses: %v", total)
	if stored("credential") != cred {
		t.Fatal("the worker dropped its credential")
	}

	// A right code while codes are refused for everyone (the worker
	// reconnects with it as soon as it is stored): the worker keeps it, says
	// so in the popup, and tries again on its own.
	if err := b.eval(sw, fmt.Sprintf(`chrome.storage.local.set({pairingCode:%q}).then(()=>true)`, issueCode(t, d, nil)), nil); err != nil {
		t.Fatal(err)
	}
	url := "chrome-extension://" + extensionID + "/popup.html"
	if err := b.call("", "Target.createTarget", map[string]any{"url": url}, nil); err != nil {
		t.Fatal(err)
	}
	popup := b.attach(b.waitTarget("page", url, 10*time.Second).TargetID)
	var text string
	waitUntil(t, 15*time.Second, "the popup saying the worker retries", func() bool {
		_ = b.eval(popup, "document.body.innerText", &text)
		return strings.Contains(text, "too many failed pairing attempts") && strings.Contains(text, "retrying in")
	})
	_ = b.eval(popup, "document.getElementById('conn').innerText", &text)
	t.Logf("popup: %s", text)
	if stored("pairingCode") == "" {
		t.Fatal("the worker dropped the code it could not try")
	}
	refusedFor := func() int {
		var cl struct {
			Data struct {
				Pairing struct {
					Refused struct {
						Recent []struct {
							Key   string `json:"key"`
							Count int    `json:"count"`
						} `json:"recent"`
					} `json:"refused"`
				} `json:"pairing"`
			} `json:"data"`
		}
		d.Do("GET", "/v1/browser/clients", nil).Decode(t, &cl)
		for _, r := range cl.Data.Pairing.Refused.Recent {
			if r.Key == "client:"+id {
				return r.Count
			}
		}
		return 0
	}
	first := refusedFor()
	waitUntil(t, 20*time.Second, "the worker's retry after pairing_rate_limited", func() bool { return refusedFor() > first })
}
