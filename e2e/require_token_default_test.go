package e2e

import (
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// Issue 32, attack 4: at the old default level (host-ops) any local
// process, a command among them, relayed requests through the user's
// logged-in browser, paused the system and minted pairing codes without
// the token. The default is now "writes": every route acting through the
// browser and every state-changing route needs it, reads do not.
func TestDefaultTokenLevelGuardsBrowserAndWrites(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{DefaultTokenLevel: true, Env: browserEnv()})
	pause := map[string]any{"requested_by": "t", "reason": "r"}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/browser/request", map[string]any{"platform": "platform_a", "method": "GET", "path": "/x"}},
		{"POST", "/v1/browser/request/cancel", map[string]any{"requestId": "r1"}},
		{"POST", "/v1/browser/pairings", map[string]any{"scopes": []string{"host-ops"}}},
		{"POST", "/v1/system/pause", pause},
		{"POST", "/v1/exec", map[string]any{"command": "true"}},
	} {
		if r := d.Do(c.method, c.path, c.body); r.Status != 401 {
			t.Errorf("%s %s without the token at the default level: %d %s", c.method, c.path, r.Status, r.Body)
		}
		if r := d.DoAuth(c.method, c.path, c.body); r.Status == 401 {
			t.Errorf("%s %s with the token: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	for _, path := range []string{"/v1/system/state", "/v1/runtime", "/healthz"} {
		if r := d.Do("GET", path, nil); r.Status != 200 {
			t.Errorf("GET %s without the token: %d %s", path, r.Status, r.Body)
		}
	}
}
