package e2e

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// A secret sent through credentials and through api_request/api_response
// traffic must appear nowhere under the data dir, in no log line and in no
// API response. The test first proves the secret really travelled (the
// platform saw it), so a relay that dropped everything could not pass.
func TestBrowserCanaryNeverStoredLoggedOrReturned(t *testing.T) {
	const canary = "CANARY-7f3a9c1e5d"
	d := startBrowserDaemon(t, "SVC_LOG_LEVEL=trace")
	plat := fakeplugin.NewPlatform(canary) // Set-Cookie and X-Session-Token carry it
	defer plat.Close()
	p := connectPlugin(t, d, "canary-client", plat)

	var bodies [][]byte
	keep := func(b []byte) { bodies = append(bodies, b) }

	// Credentials with the canary in headers and cookies, and a refused
	// credentials message carrying it too.
	capture(t, d, p, "platform_a", "acct", map[string]string{"Authorization": "Bearer " + canary, "Cookie": "sid=" + canary, "X-Token": canary})
	_ = p.Send(bridgeproto.Credentials{Type: "credentials", Platform: "platform_q", Headers: map[string]string{"Authorization": canary}})
	_ = p.SendRaw([]byte(`{"type":"credentials","platform":"platform_a","host":"` + canary + `/x","headers":{"a":"` + canary + `"}}`))
	_ = p.SendRaw([]byte(`{"type":"` + canary + `"}`))
	if err := p.WaitCount(3*time.Second, bridgeproto.TypeError, 3); err != nil {
		t.Fatal(err)
	}

	// Relayed traffic: the caller's Authorization goes to the page; the
	// platform answers with the canary in its session headers.
	auth := map[string]string{"Authorization": "Bearer " + canary}
	r := d.Do("POST", "/v1/browser/request", map[string]any{"platform": "platform_a", "path": "/api/echo", "method": "POST", "headers": auth, "body": map[string]string{"hello": "world"}})
	if r.Status != 200 {
		t.Fatalf("buffered relay: %s", r.Body)
	}
	keep(r.Body)
	r = d.Do("POST", "/v1/browser/platform_a/send", map[string]any{"prompt": "hi", "headers": auth})
	keep(r.Body)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, raw := postSSE(t, ctx, d.URL+"/v1/browser/request", map[string]any{"platform": "platform_b", "path": "/api/stream?n=3", "responseMode": "sse", "headers": auth}, nil)
	keep([]byte(raw))
	if _, ok := plat.SeenAuth.Load("Bearer " + canary); !ok {
		t.Fatal("the canary never reached the platform: the test would prove nothing")
	}
	// An action, so the action paths are covered too.
	keep(d.Do("POST", "/v1/browser/actions", map[string]any{"action": "request_credentials", "platform": "platform_a"}).Body)

	// Let the periodic flushes and sweeps run, then read every view.
	time.Sleep(500 * time.Millisecond)
	for _, path := range []string{"/v1/browser", "/v1/browser?platform=platform_a", "/v1/browser/platform_a/current", "/v1/status", "/v1/system/state", "/health", "/v1/runtime", "/describe/business", "/describe/control", "/metrics"} {
		keep(d.Do("GET", path, nil).Body)
	}
	for i, b := range bodies {
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("API response %d carries the canary: %s", i, b)
		}
	}
	// Frames the daemon sent the plugin other than the relayed request itself.
	for _, m := range p.Messages() {
		if m.Type != bridgeproto.TypeAPIRequest && bytes.Contains(m.Raw, []byte(canary)) {
			t.Errorf("%s frame carries the canary: %s", m.Type, m.Raw)
		}
	}
	// Snapshot the FSM to disk too, then stop the daemon so everything is flushed.
	if err := d.Terminate(15 * time.Second); err != nil {
		t.Fatalf("terminate: %v", err)
	}
	logs := d.Logs()
	if !strings.Contains(logs, "browser credentials captured") || !strings.Contains(logs, "browser message refused") {
		t.Fatalf("logs lack the expected lines, so the check below proves little:\n%s", logs)
	}
	for i, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, canary) {
			t.Errorf("log line %d carries the canary: %s", i, line)
		}
	}
	files := 0
	err := filepath.WalkDir(d.DataDir, func(path string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s carries the canary", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The data dir must hold the records (metadata), or the check is empty.
	d.Restart()
	rm := readModel(t, d, "?client_id=canary-client&platform=platform_a")
	if files == 0 || len(rm.Records) != 1 || rm.Records[0].HeaderCount != 3 || !strings.HasPrefix(rm.Records[0].CredentialFingerprint, "sha256:") {
		t.Fatalf("persisted metadata missing (files %d): %+v", files, rm.Records)
	}
}
