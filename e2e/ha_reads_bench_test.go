package e2e

import (
	"net/http"
	"testing"

	"github.com/svcd/svcd/e2e/benchfig"
)

// BenchmarkPerfP4Standby (issue 33): a consistent GET /v1/system/state on
// the standby (a read index from the leader over HTTP, then the local
// read) against the same read on the leader (a VerifyLeader round), on one
// two-node + witness cluster, 8 concurrent callers, ten alternating rounds.
// Goal: the standby's p50 at most 3x the leader's.
func BenchmarkPerfP4Standby(b *testing.B) {
	c := startHAClusterEnv(b, nil)
	defer c.stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	call := func(url string) func() {
		return func() {
			resp, err := client.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("GET %s: %d", url, resp.StatusCode)
			}
		}
	}
	leader := call(c.n1.URL + "/v1/system/state")
	standby := call(c.n2.URL + "/v1/system/state")
	n := benchfig.Samples(2000)
	bd, bw, sd, sw := benchfig.AlternateRounds(n, 10, 8, leader, standby)
	benchfig.Report(b, benchfig.Figure{ID: "P4standby", Name: "consistent GET /v1/system/state on a standby vs on the leader", Goal: "p50 <= 3x",
		Baseline: benchfig.Summarize("leader", bd, bw), Subject: benchfig.Summarize("standby", sd, sw), Note: "two nodes + witness on loopback, 8 concurrent callers, 10 alternating rounds"})
}
