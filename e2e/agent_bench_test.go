package e2e

import (
	"testing"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/workers/agentd/fakemodel"
)

// BenchmarkAgentTurnProxyVsDirect times a whole turn (POST with waitMs until
// the final text is back) through the main daemon's /v1/agent proxy against
// the same turn posted straight to agentd, on the same agentd and the same
// codex app-server child, alternating the two (benchPair). The ratio is the
// proxy's cost:
//
//	go test -run '^$' -bench AgentTurn -benchtime 30x ./e2e/
func BenchmarkAgentTurnProxyVsDirect(b *testing.B) {
	r := startAgentRig(b)
	r.fm.Default = fakemodel.Reply{Text: "bench reply", Chunks: 2}
	s := sessionOf(b, r.d.DoAuth("POST", "/v1/agent/sessions", map[string]any{"cwd": b.TempDir(), "purpose": "bench"}))
	body := map[string]any{"sessionId": s["sessionId"], "input": "bench", "waitMs": 30000}
	check := func(resp *harness.Response) {
		if out := sessionOf(b, resp); out["lastTurnOutput"] != "bench reply" {
			b.Fatalf("turn: %v", out)
		}
	}
	proxy := func() { check(r.d.DoAuth("POST", "/v1/agent/turn", body)) }
	direct := func() {
		check(harness.Do(b, "POST", "http://"+r.agentd+"/v1/agentd/turn", body, "Authorization: Bearer "+r.d.Token))
	}
	benchPair(b, "agent turn via proxy vs agentd direct", proxy, direct)
}
