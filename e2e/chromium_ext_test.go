package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// extensionDaemon starts the daemon with the browser tuning but WITHOUT an
// explicit browser_extension_ids: the default allow-list must know the
// extension's pinned id.
func extensionDaemon(t *testing.T) *harness.Daemon {
	t.Helper()
	var env []string
	for _, e := range browserEnv() {
		if !strings.HasPrefix(e, "SVC_BROWSER_EXTENSION_IDS=") {
			env = append(env, e)
		}
	}
	return harness.Start(t, harness.Options{Env: env})
}

// configure stores the daemon address, token and platform origins the way
// the options page does; the worker connects on the change.
func configure(t *testing.T, b *browser, sw string, d *harness.Daemon, origins map[string]string) {
	t.Helper()
	o := "{}"
	if len(origins) > 0 {
		var parts []string
		for k, v := range origins {
			parts = append(parts, fmt.Sprintf("%q:%q", k, v))
		}
		o = "{" + strings.Join(parts, ",") + "}"
	}
	js := fmt.Sprintf(`chrome.storage.local.set({daemon:%q, token:%q, clientId:"chromium-e2e", origins:%s}).then(()=>true)`, wsURL(d), d.Token, o)
	if err := b.eval(sw, js, nil); err != nil {
		t.Fatal(err)
	}
}

func clientConnected(t *testing.T, d *harness.Daemon, id string) bool {
	for _, c := range readModel(t, d, "").Clients {
		if c.ClientID == id && c.Connected {
			return true
		}
	}
	return false
}

// TestExtensionConnects: headless Chromium loads the unpacked extension, its
// service worker starts, pairs with the real daemon (Origin
// chrome-extension://<pinned id> accepted by the default allow-list) and
// shows as a connected client.
func TestExtensionConnects(t *testing.T) {
	b := startBrowser(t)
	d := extensionDaemon(t)
	sw := b.worker()
	configure(t, b, sw, d, nil)
	waitUntil(t, 15*time.Second, "the extension connected", func() bool { return clientConnected(t, d, "chromium-e2e") })
	var st map[string]any
	if err := b.eval(sw, `chrome.storage.session.get('status').then(s=>s.status)`, &st); err != nil {
		t.Fatal(err)
	}
	if st["connected"] != true {
		t.Fatalf("the worker's status says not connected: %v", st)
	}
}
