package supervisor

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/benchfig"
	"github.com/svcd/svcd/raftstore/raftstoretest"
)

// BenchmarkListRoutesAtScale is figure S2 (issue 24) in this process: the
// list routes over real HTTP against a server holding
// raftstoretest.LargeScale (SVC_BENCH_STATE_DIV divides it) and one with an
// empty state, request by request in turn. It is the one to profile
// (-cpuprofile): the daemon of e2e BenchmarkPerfS is another process.
func BenchmarkListRoutesAtScale(b *testing.B) {
	large, lhs := newTestServer(b)
	_, ehs := newTestServer(b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	t0 := time.Now()
	cmds, err := raftstoretest.Fill(ctx, large.node, raftstoretest.LargeScale().Divided())
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("large state: %d commands in %v", cmds, time.Since(t0))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	samples := max(50, benchfig.Samples(2000)/4)
	for _, r := range []struct{ id, path string }{
		{"S2a", "/v1/tasks?limit=50"}, {"S2b", "/v1/renewal/conversations"}, {"S2c", "/v1/browser"},
	} {
		base := benchCallAuth(b, client, ehs.URL+r.path)
		subj := benchCallAuth(b, client, lhs.URL+r.path)
		for i := 0; i < 20; i++ {
			base()
			subj()
		}
		te, tl := benchfig.Alternate(samples, base, subj)
		benchfig.Report(b, benchfig.Figure{ID: r.id + "-inproc", Name: "GET " + r.path + " (in-process server): large state vs empty state",
			Goal: "p50 <= 2x", Baseline: benchfig.Summarize("empty", te, 0), Subject: benchfig.Summarize("large", tl, 0)})
	}
}

// benchCallAuth is benchCall for a GET that needs the test token.
func benchCallAuth(b *testing.B, client *http.Client, url string) func() {
	return func() {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer unit-test-token")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 32<<10)
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				break
			}
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("GET %s: %d", url, resp.StatusCode)
		}
	}
}
