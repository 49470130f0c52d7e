package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// agentdListen waits for d's GET /v1/agent to answer 200 and returns the
// listen address the agentd that answered reports.
func agentdListen(t *testing.T, d *harness.Daemon) string {
	t.Helper()
	var listen string
	waitUntil(t, 30*time.Second, "GET /v1/agent answering 200", func() bool {
		resp := d.DoAuth("GET", "/v1/agent", nil)
		if resp.Status != 200 {
			return false
		}
		data, _ := resp.JSON(t)["data"].(map[string]any)
		ad, _ := data["agentd"].(map[string]any)
		daemon, _ := ad["daemon"].(map[string]any)
		listen, _ = daemon["listen"].(string)
		return listen != ""
	})
	return listen
}

// Issue 34 §7: two daemons with their own ports on one host and no
// agentd_listen each run and reach their own agentd (no fixed 4319, no
// "address already in use"); a daemon whose agentd_listen points at
// another daemon's agentd refuses to talk to it (503 agent_unavailable:
// it cannot prove this daemon's secret).
func TestTwoDaemonsEachReachTheirOwnAgentd(t *testing.T) {
	env := []string{"SVC_AGENTD_LISTEN=", "PATH=/nonexistent-bin"}
	d1 := harness.Start(t, harness.Options{Env: env})
	d2 := harness.Start(t, harness.Options{Env: env})
	l1, l2 := agentdListen(t, d1), agentdListen(t, d2)
	t.Logf("agentd of d1 at %s, of d2 at %s", l1, l2)
	if l1 == l2 || l1 == "127.0.0.1:4319" || l2 == "127.0.0.1:4319" {
		t.Fatalf("the daemons share an agentd address: %s, %s", l1, l2)
	}
	for _, d := range []*harness.Daemon{d1, d2} {
		if strings.Contains(d.Logs(), "address already in use") {
			t.Fatalf("a daemon's agentd could not listen:\n%s", grepLines(d.Logs(), "address already in use"))
		}
	}
	d3 := harness.Start(t, harness.Options{Env: []string{"SVC_AGENTD_LISTEN=" + l1, "PATH=/nonexistent-bin"}})
	var last string
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp := d3.DoAuth("GET", "/v1/agent", nil)
		last = string(resp.Body)
		if resp.Status == 200 {
			t.Fatalf("d3's /v1/agent answered with d1's agentd: %s", last)
		}
		if resp.Status == 503 && strings.Contains(last, "agent_unavailable") && strings.Contains(last, "not this daemon's") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("d3's /v1/agent never refused d1's agentd: %s", last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Issue 34 §7: under require_token = "all" agentd's own read routes need
// the token like the daemon's (its /healthz, a probe, does not).
func TestAgentdReadsNeedTheTokenUnderAll(t *testing.T) {
	d := harness.Start(t, harness.Options{Env: []string{"SVC_AGENTD_LISTEN=", "PATH=/nonexistent-bin", "SVC_REQUIRE_TOKEN=all"}})
	listen := agentdListen(t, d)
	get := func(path, token string) int {
		req, _ := http.NewRequest("GET", "http://"+listen+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/v1/agentd/status", "/v1/agentd/sessions", "/describe"} {
		if s := get(path, ""); s != 401 {
			t.Errorf("%s without the token: %d, want 401", path, s)
		}
		if s := get(path, d.Token); s != 200 {
			t.Errorf("%s with the token: %d", path, s)
		}
	}
	if s := get("/healthz", ""); s != 200 {
		t.Errorf("/healthz without the token: %d", s)
	}
}
