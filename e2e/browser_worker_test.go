package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
)

type relayWorkerInfo struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Pid      int    `json:"pid"`
	Restarts int    `json:"restarts"`
}

func relayWorker(t *testing.T, d *harness.Daemon) relayWorkerInfo {
	t.Helper()
	resp := d.Do("GET", "/v1/workers", nil)
	var list envelope[struct {
		Workers []relayWorkerInfo `json:"workers"`
	}]
	resp.Decode(t, &list)
	for _, w := range list.Data.Workers {
		if w.Name == "relay" {
			return w
		}
	}
	t.Fatalf("no relay worker in %s", resp.Body)
	return relayWorkerInfo{}
}

// backedOff is the key of a platform_b target of m whose relay state has a
// backoff level ("": none).
func backedOff(m browserModel) string {
	for key, d := range m.Policy.Targets {
		if lvl, _ := d.Relay["backoff_level"].(float64); strings.HasPrefix(key, "platform_b/") && lvl >= 1 {
			return key
		}
	}
	return ""
}

// The relay engine runs as a go-plugin worker. Killed, it is restarted with
// its persisted state restored; crash-looping (failed), requests get a
// clear 503 while the daemon and the rest of the bridge stay up.
func TestBrowserRelayWorkerDown(t *testing.T) {
	d := startBrowserDaemon(t, "SVC_RELAY_BACKOFF_BASE_MS=60000", "SVC_WORKER_CRASH_LOOP_COUNT=2", "SVC_WORKER_CRASH_LOOP_WINDOW_MS=60000")
	plat := fakeplugin.NewPlatform("s")
	defer plat.Close()
	connectPlugin(t, d, "wk-1", plat)
	waitUntil(t, 10*time.Second, "relay worker running", func() bool { return relayWorker(t, d).State == "running" })

	// A 503 from the platform puts the target into a 60 s backoff.
	if r := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/status?code=503"}); r.Status != 200 {
		t.Fatalf("relay: %s", r.Body)
	}
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo"}), 429, "relay_refused")
	// The page's target state comes from the worker (Status of the page's
	// range of keys over gRPC); the worker flushes the change at once, which
	// on a loaded machine may still be after the refusal reached us.
	waitUntil(t, 10*time.Second, "the read model with the relay up and platform_b backing off", func() bool {
		rm := readModel(t, d, "")
		return rm.Policy.RelayAvailable && backedOff(rm) != ""
	})

	// Kill the worker: the manager restarts it and the backoff is restored into it.
	w := relayWorker(t, d)
	if err := syscall.Kill(w.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "relay worker restarted", func() bool {
		n := relayWorker(t, d)
		return n.State == "running" && n.Pid != w.Pid
	})
	r := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/echo"})
	wantError(t, r, 429, "relay_refused")
	if !strings.Contains(string(r.Body), `"reason":"backoff"`) {
		t.Fatalf("backoff not restored into the new worker: %s", r.Body)
	}

	// Kill it again within the crash-loop window: failed, and requests get 503.
	w = relayWorker(t, d)
	_ = syscall.Kill(w.Pid, syscall.SIGKILL)
	waitUntil(t, 10*time.Second, "relay worker failed", func() bool { return relayWorker(t, d).State == "failed" })
	start := time.Now()
	wantError(t, d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_c", "path": "/api/echo"}), 503, "relay_unavailable")
	if time.Since(start) > 5*time.Second {
		t.Fatal("503 took too long")
	}
	// The daemon, the bridge and the read model stay up.
	if r := d.Do("GET", "/healthz", nil); r.Status != 200 {
		t.Fatal("daemon down")
	}
	rm := readModel(t, d, "")
	if rm.Policy.RelayAvailable || len(rm.Records) == 0 {
		t.Fatalf("read model with the relay down: %+v", rm.Policy)
	}
	// The targets still show their persisted state.
	if backedOff(rm) == "" {
		t.Fatalf("read model with the relay down: no persisted platform_b backoff in %+v", rm.Policy.Targets)
	}
	if r := d.Do("POST", "/v1/browser/actions", map[string]any{"action": "plugin_status"}); r.Status != 200 {
		t.Fatalf("actions with the relay down: %s", r.Body)
	}
	// An operator restart brings it back.
	if r := d.DoAuth("POST", "/v1/workers/restart", map[string]any{"worker": "relay"}); r.Status != 200 {
		t.Fatalf("restart relay: %d %s", r.Status, r.Body)
	}
	waitUntil(t, 10*time.Second, "relay back", func() bool { return relayWorker(t, d).State == "running" })
	if r := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_c", "path": "/api/echo"}); r.Status != 200 {
		t.Fatalf("relay after restart: %s", r.Body)
	}
}
