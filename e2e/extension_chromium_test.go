package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/svcd/svcd/e2e/harness"
)

// extensionID is derived from the pinned key in extension/manifest.json.
const extensionID = "gikjffagoanggfeaondbmbjampbgmeed"

// chromiumPath finds Chromium; under CI=true its absence fails the test
// instead of skipping it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is missing (CI=true): install chromium")
	}
	t.Skip("chromium not installed")
	return ""
}

// startChromium runs headless Chromium (new headless mode, which runs
// extensions) with a fresh profile and only the svcd extension loaded, and
// returns its DevTools HTTP address.
func startChromium(t *testing.T) string {
	t.Helper()
	bin := chromiumPath(t)
	ext := filepath.Join(harness.RepoRoot(), "extension")
	port := harness.FreePort(t)
	_, portNum, _ := strings.Cut(port, ":")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu",
		"--no-first-run", "--user-data-dir="+t.TempDir(),
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port="+portNum,
		"--disable-extensions-except="+ext, "--load-extension="+ext, "about:blank")
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	return "127.0.0.1:" + portNum
}

// serviceWorkerDebugURL waits for the extension's service worker target.
func serviceWorkerDebugURL(t *testing.T, devtools string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + devtools + "/json/list")
		if err == nil {
			var targets []struct{ Type, URL, WebSocketDebuggerURL string }
			_ = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
			for _, tg := range targets {
				if tg.Type == "service_worker" && strings.HasPrefix(tg.URL, "chrome-extension://"+extensionID+"/") {
					return tg.WebSocketDebuggerURL
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no service worker for extension %s within 20 s", extensionID)
	return ""
}

// evalInWorker runs one expression in the service worker through CDP.
func evalInWorker(t *testing.T, wsURL, expr string) {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err != nil {
		t.Fatalf("dial devtools: %v", err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := c.WriteJSON(map[string]any{"id": 1, "method": "Runtime.evaluate",
		"params": map[string]any{"expression": expr, "awaitPromise": true}}); err != nil {
		t.Fatalf("devtools write: %v", err)
	}
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := c.ReadJSON(&msg); err != nil {
			t.Fatalf("devtools read: %v", err)
		}
		if msg.ID == 1 {
			if msg.Error != nil || strings.Contains(string(msg.Result), "exceptionDetails") {
				t.Fatalf("evaluate failed: %s %s", msg.Error, msg.Result)
			}
			return
		}
	}
}

// Chromium boots with the extension; given the pairing token and daemon URL
// through its storage, the service worker pairs with the real daemon, whose
// DEFAULT allowed extension ids accept the pinned id.
func TestExtensionConnectsInChromium(t *testing.T) {
	devtools := startChromium(t)
	d := harness.Start(t, harness.Options{Env: []string{"SVC_LOG_LEVEL=debug"}})
	sw := serviceWorkerDebugURL(t, devtools)
	evalInWorker(t, sw, fmt.Sprintf("chrome.storage.local.set({daemonUrl: %q, token: %q})",
		"ws://"+d.Addr+"/ws/browser", d.Token))
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range readModel(t, d, "").Clients {
			if c.Connected && strings.HasPrefix(c.ClientID, "ext-") {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the extension did not pair within 15 s; clients: %+v\ndaemon log:\n%s", readModel(t, d, "").Clients, d.Logs())
}
