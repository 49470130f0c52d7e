package e2e

import (
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// require_token widens which routes demand the shared token: host-ops is
// SPEC.md's contract, writes adds every state-changing route, all every
// route but the probes and the browser WebSocket (which pairs at hello).
// Each level is checked on the real binary, with the describe documents
// saying the same, the plugin still pairing and the status wrapper still
// showing the state under all.
func TestRequireTokenLevels(t *testing.T) {
	t.Parallel()
	type check struct {
		method, path string
		body         any
		needs        bool // a call without the token is 401
	}
	pause := map[string]any{"requested_by": "t", "reason": "r"}
	for _, tc := range []struct {
		level  string
		checks []check
	}{
		{"host-ops", []check{
			{"POST", "/v1/system/pause", pause, false},
			{"GET", "/v1/system/state", nil, false},
			{"POST", "/v1/exec", map[string]any{"command": "true"}, true},
		}},
		{"writes", []check{
			{"POST", "/v1/system/pause", pause, true},
			{"POST", "/v1/instructions/ingest", map[string]any{}, true},
			{"GET", "/v1/system/state", nil, false},
			{"GET", "/v1/renewal/conversations", nil, false},
		}},
		{"all", []check{
			{"POST", "/v1/system/pause", pause, true},
			{"GET", "/v1/system/state", nil, true},
			{"GET", "/v1/renewal/conversations", nil, true},
			{"GET", "/describe", nil, true},
			{"GET", "/healthz", nil, false},
			{"GET", "/readyz", nil, false},
			{"GET", "/rolez", nil, false},
		}},
	} {
		t.Run(tc.level, func(t *testing.T) {
			t.Parallel()
			d := startBrowserDaemon(t, "SVC_REQUIRE_TOKEN="+tc.level)
			for _, c := range tc.checks {
				r := d.Do(c.method, c.path, c.body)
				if c.needs != (r.Status == 401) {
					t.Errorf("%s %s without the token: %d %s (token required: %v)", c.method, c.path, r.Status, r.Body, c.needs)
				}
				if c.needs {
					if r := d.DoAuth(c.method, c.path, c.body); r.Status == 401 {
						t.Errorf("%s %s with the token: %d %s", c.method, c.path, r.Status, r.Body)
					}
				}
			}
			// The describe documents say which routes need it (the same
			// table as the router).
			var caps struct {
				Data struct {
					Read, Write, Diagnostic []struct{ Method, Path, Auth string }
				} `json:"data"`
			}
			d.DoAuth("GET", "/v1/capabilities", nil).Decode(t, &caps)
			described := map[string]bool{}
			for _, r := range append(append(caps.Data.Read, caps.Data.Write...), caps.Data.Diagnostic...) {
				described[r.Method+" "+r.Path] = r.Auth != ""
			}
			for _, c := range tc.checks {
				if got, ok := described[c.method+" "+c.path]; !ok || got != c.needs {
					t.Errorf("capabilities of %s %s under %s: auth %v (listed %v), want %v", c.method, c.path, tc.level, got, ok, c.needs)
				}
			}
			// The browser WebSocket still pairs in its hello.
			connectPlugin(t, d, "level-"+tc.level, nil)
		})
	}
}

// Under require_token = "all" the read-only status wrapper reads the
// daemon with the token it finds the way svcctl does, and serves its views
// without one; without the token it says the daemon refused.
func TestStatusWrapperUnderRequireTokenAll(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{Env: []string{"SVC_REQUIRE_TOKEN=all"}})
	withToken := startStatusWrapper(t, d.URL, "SVC_SHARED_TOKEN="+d.Token)
	if r := harness.Do(t, "GET", withToken+"/v1/status", nil); r.Status != 200 || !strings.Contains(string(r.Body), `"daemon_reachable":true`) {
		t.Fatalf("wrapper with the token: %d %s", r.Status, r.Body)
	}
	without := startStatusWrapper(t, d.URL, "SVC_DATA_DIR="+t.TempDir())
	if r := harness.Do(t, "GET", without+"/v1/status", nil); !strings.Contains(string(r.Body), "401") {
		t.Fatalf("wrapper without the token: %d %s", r.Status, r.Body)
	}
}
