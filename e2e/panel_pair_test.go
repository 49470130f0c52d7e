package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
)

// The panel's "Pair a browser" button in real Chromium (issue 25 §1): the
// page never holds the token; without it, or with a wrong one, the button
// shows the route's 401 as a message; with the pasted token it shows a
// code, its expiry and the WebSocket address, and that code pairs a plugin
// at hello with the chosen scopes. The panel's own refresh keeps the field
// and the code; past the pending-code bound the button shows the 429.
func TestPanelPairButton(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t, "SVC_BROWSER_PAIRING=codes")
	page := d.Do("GET", "/v1/status/ui", nil)
	if body := string(page.Body); page.Status != 200 || !strings.Contains(body, "Pair a browser") || strings.Contains(body, d.Token) {
		t.Fatalf("panel without the token: %d, has button %v, embeds token %v", page.Status, strings.Contains(body, "Pair a browser"), strings.Contains(body, d.Token))
	}

	b := startBrowserWith(t, "")
	url := "http://" + d.Addr + "/v1/status/ui"
	b.openTab(url)
	pg := b.attach(b.waitTarget("page", url, 10*time.Second).TargetID)
	b.recordConsole(pg)
	text := func(id string) string {
		var v string
		_ = b.eval(pg, fmt.Sprintf(`(document.getElementById(%q)||{}).textContent||""`, id), &v)
		return v
	}
	waitUntil(t, 10*time.Second, "the panel's button", func() bool { return text("pair-button") == "Pair a browser" })
	press := func(token, scope string) {
		t.Helper()
		js := fmt.Sprintf(`document.getElementById('pair-result').replaceChildren(), document.getElementById('pair-token').value=%q, document.getElementById('pair-scope').value=%q, document.getElementById('pair-button').click(), true`, token, scope)
		if err := b.eval(pg, js, nil); err != nil {
			t.Fatal(err)
		}
	}
	shows := func(what string, want ...string) string {
		t.Helper()
		var got string
		waitUntil(t, 10*time.Second, what, func() bool {
			got = text("pair-result")
			for _, w := range want {
				if !strings.Contains(got, w) {
					return false
				}
			}
			return true
		})
		return got
	}

	press("", "bridge")
	shows("the 401 without a token", "401", "paste the daemon's shared token first")
	press("not-the-token", "bridge")
	shows("the 401 with a wrong token", "401", "refused this token", "wrong bearer token")
	if text("pair-code") != "" {
		t.Fatal("a refused request showed a code")
	}

	pair := func(scope, clientID, wantScopes string) {
		t.Helper()
		press(d.Token, scope)
		shows("a code", "It works once", "Expires", "WebSocket address", wsURL(d))
		code := text("pair-code")
		if len(code) != 9 || code[4] != '-' {
			t.Fatalf("code %q", code)
		}
		if got := text("pair-scopes"); got != wantScopes {
			t.Fatalf("scopes shown %q, want %q", got, wantScopes)
		}
		if exp := text("pair-expires"); !strings.Contains(exp, "in 9 min") && !strings.Contains(exp, "in 10 min") {
			t.Fatalf("expiry shown %q", exp)
		}
		if ws := text("pair-ws"); ws != wsURL(d) {
			t.Fatalf("ws address %q", ws)
		}
		p := dialPlugin(t, fakeplugin.Options{URL: wsURL(d), Code: code, ClientID: clientID})
		ok := p.HelloOK()
		if !strings.HasPrefix(ok.Credential, "svcb_") || strings.Join(ok.Scopes, ",") != strings.ReplaceAll(wantScopes, ", ", ",") {
			t.Fatalf("hello_ok with the panel's code: %+v", ok)
		}
	}
	pair("bridge", "panel-1", "bridge")
	pair("host-ops", "panel-2", "bridge, host-ops")

	// The refresh swaps the live part only: the new clients appear while
	// the token field and the shown code stay.
	shown := text("pair-code")
	waitUntil(t, 15*time.Second, "the refreshed panel listing the paired clients", func() bool {
		return strings.Contains(text("live"), "Browser panel-1") && strings.Contains(text("live"), "Browser panel-2")
	})
	var field string
	_ = b.eval(pg, `document.getElementById('pair-token').value`, &field)
	if field != d.Token || text("pair-code") != shown {
		t.Fatal("the panel's refresh dropped the token field or the shown code")
	}

	// Past the pending-code bound the route answers 429 and the button says so.
	for i := 0; ; i++ {
		r := d.DoAuth("POST", "/v1/browser/pairings", nil)
		if r.Status == 429 {
			break
		}
		if r.Status != 200 || i > 32 {
			t.Fatalf("issuing code %d: %d %s", i, r.Status, r.Body)
		}
	}
	press(d.Token, "bridge")
	shows("the 429", "429", "pairing codes are waiting to be used")
	if c := b.console.String(); strings.Contains(c, d.Token) || strings.Contains(c, "exception") {
		t.Fatalf("console: %s", c)
	}
}
