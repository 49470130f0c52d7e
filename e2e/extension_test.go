package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/supervisor/config"
)

// extensionCopy is the unpacked extension with a development config that
// points it at this daemon and the fake platform.
func extensionCopy(t *testing.T, d *harness.Daemon, clientID string, platformURL string) string {
	t.Helper()
	dir := extensionDir(t, nil)
	cfg := map[string]any{"daemonURL": "ws://" + d.Addr + "/ws/browser", "token": d.Token, "clientId": clientID,
		"origins": map[string]string{"platform_a": platformURL, "platform_b": platformURL, "platform_c": platformURL}}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.local.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// extensionDir is a fresh copy of the unpacked extension; edit, when not
// nil, rewrites its manifest.json into the variant a test needs.
func extensionDir(t *testing.T, edit func(manifest string) string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "extension")
	if out, err := exec.Command("cp", "-r", filepath.Join(harness.RepoRoot(), "extension"), dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the extension: %v %s", err, out)
	}
	if edit == nil {
		return dir
	}
	mf := filepath.Join(dir, "manifest.json")
	raw, err := os.ReadFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mf, []byte(edit(string(raw))), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func clientConnected(t *testing.T, d *harness.Daemon, clientID string) bool {
	var env struct {
		Data struct {
			Clients []struct {
				ClientID  string `json:"client_id"`
				Connected bool   `json:"connected"`
			} `json:"clients"`
		} `json:"data"`
	}
	r := d.Do("GET", "/v1/browser?client_id="+clientID, nil)
	if r.Status != 200 || json.Unmarshal(r.Body, &env) != nil {
		return false
	}
	for _, c := range env.Data.Clients {
		if c.ClientID == clientID && c.Connected {
			return true
		}
	}
	return false
}

// The real extension in real Chromium, configured by the development config
// (config.local.json) instead of the options storage: it connects and pairs
// under its pinned id's origin, answers a management action, relays a buffered and an
// SSE request, and reconnects by itself after the daemon restarts.
func TestExtensionInChromium(t *testing.T) {
	// A fixed address: the extension must find the restarted daemon there.
	d := harness.Start(t, harness.Options{KeepAddr: true, Env: []string{"SVC_LOG_LEVEL=debug"}})
	platform := fakeplugin.NewPlatform("ext-secret")
	defer platform.Close()
	startBrowserWith(t, extensionCopy(t, d, "ext-e2e", platform.URL))
	waitUntil(t, 30*time.Second, "the extension to connect", func() bool { return clientConnected(t, d, "ext-e2e") })
	// Log lines reach the test through a pipe, a little after the read model.
	if !d.WaitLog("browser client paired", 5*time.Second) {
		t.Fatal("no pairing in the daemon log")
	}
	if !strings.Contains(d.Logs(), "chrome-extension://"+config.BundledExtensionID) && !strings.Contains(d.Logs(), "ext-e2e") {
		t.Log("note: the daemon does not log the Origin")
	}

	// A management action, answered by the service worker.
	act := d.Do("POST", "/v1/browser/actions", map[string]any{"action": "plugin_status", "clientId": "ext-e2e"})
	if act.Status != 200 || !strings.Contains(string(act.Body), `"completed":true`) || !strings.Contains(string(act.Body), `"connected":true`) {
		t.Fatalf("plugin_status: %d %s", act.Status, act.Body)
	}
	// A buffered relay through the extension.
	req := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo", "method": "POST", "body": map[string]string{"q": "hi"}, "clientId": "ext-e2e"})
	if req.Status != 200 || !strings.Contains(string(req.Body), `\"method\":\"POST\"`) {
		t.Fatalf("buffered relay: %d %s", req.Status, req.Body)
	}
	if strings.Contains(string(req.Body), platform.Secret) {
		t.Fatal("the platform's secret reached the caller")
	}
	// An SSE relay: every event in order, then the end.
	sse := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/stream?n=5", "responseMode": "sse", "clientId": "ext-e2e"})
	if sse.Status != 200 || strings.Count(string(sse.Body), "event: stream_event") != 5 || !strings.Contains(string(sse.Body), "event: stream_end") {
		t.Fatalf("sse relay: %d %s", sse.Status, sse.Body)
	}

	// The daemon restarts (same address): the extension comes back by itself.
	restart := time.Now()
	d.Kill()
	d.Restart()
	waitUntil(t, 30*time.Second, "the extension to reconnect after the restart", func() bool { return clientConnected(t, d, "ext-e2e") })
	t.Logf("reconnected %v after the daemon restart", time.Since(restart).Round(time.Millisecond))
}
