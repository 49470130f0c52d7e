package supervisor

import (
	"net/http"
	"testing"

	"github.com/svcd/svcd/e2e/benchfig"
)

// BenchmarkPerfP4Consistent (issue 33): what a linearizable read costs on
// the leader. GET /v1/system/state (consistent, the default) against
// GET /v1/system/state?stale on the same server, 8 concurrent callers, ten
// alternating rounds.
func BenchmarkPerfP4Consistent(b *testing.B) {
	_, hs := newTestServer(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	stale := benchCall(b, client, "GET", hs.URL+"/v1/system/state?stale", "")
	consistent := benchCall(b, client, "GET", hs.URL+"/v1/system/state", "")
	bd, bw, sd, sw := benchfig.AlternateRounds(benchfig.Samples(2000)*5, 10, 8, stale, consistent)
	benchfig.Report(b, benchfig.Figure{ID: "P4consistent", Name: "GET /v1/system/state consistent vs ?stale on the leader", Goal: "informational (P4 holds the goal)",
		Baseline: benchfig.Summarize("stale", bd, bw), Subject: benchfig.Summarize("consistent", sd, sw), Note: "single node, 8 concurrent callers, 10 alternating rounds"})
}
