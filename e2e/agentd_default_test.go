package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// With no agentd setting at all, the daemon runs agentd; on a machine
// without the Codex CLI (an empty PATH here) GET /v1/agent answers 200 with
// the child missing, what was looked for and how to install it — no 503,
// and no crash loop of the worker.
func TestAgentdByDefaultWithCodexMissing(t *testing.T) {
	d := harness.Start(t, harness.Options{Env: []string{"PATH=/nonexistent-bin"}})
	var child map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := d.Do("GET", "/v1/agent", nil)
		if resp.Status == 200 {
			data, _ := resp.JSON(t)["data"].(map[string]any)
			ad, _ := data["agentd"].(map[string]any)
			child, _ = ad["child"].(map[string]any)
			if child["state"] == "missing" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /v1/agent never showed the child missing: %d %s\nlogs:\n%s", resp.Status, resp.Body, d.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(child["looked_for"].(string), "codex on PATH=/nonexistent-bin") ||
		!strings.Contains(child["install"].(string), "@openai/codex@") {
		t.Fatalf("child status does not say what is missing and how to install it: %v", child)
	}
	time.Sleep(time.Second)
	w := d.Do("GET", "/v1/workers", nil).JSON(t)
	found := false
	for _, x := range w["data"].(map[string]any)["workers"].([]any) {
		wk := x.(map[string]any)
		if wk["name"] == "agentd" {
			found = true
			if wk["state"] != "running" || wk["restarts"] != float64(0) {
				t.Fatalf("agentd worker is not steadily running: %v", wk)
			}
		}
	}
	if !found {
		t.Fatalf("no agentd worker in /v1/workers: %v", w)
	}
}
