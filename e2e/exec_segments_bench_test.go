package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"testing"

	"github.com/svcd/svcd/e2e/benchfig"
	"github.com/svcd/svcd/e2e/harness"
)

// BenchmarkExecSegments splits P3 into segments, each measured as a whole
// call, all interleaved round-robin in one run so the machine's load hits
// every one alike:
//
//	direct_true       fork/exec of `true`, waiting for exit (P3's baseline)
//	direct_sh_true    fork/exec of `/bin/sh -c true` (what the worker runs)
//	bare_http         GET of a bare net/http handler in another process: the
//	                  floor of any HTTP call, whatever the daemon does
//	healthz           GET /healthz on the daemon (no auth, no body)
//	http_refused      POST /v1/exec refused by validation: the HTTP leg only
//	hop_refused       POST /v1/exec whose cwd does not exist: HTTP + the gRPC
//	                  hop to the worker and back, nothing started
//	api_true          POST /v1/exec of `true` (P3's subject)
//
// Each line prints the p50 and its ratio to direct_true. Differences of
// p50s are only a guide (the tails do not line up), but they show which
// segment holds the time.
//
//	go test -run '^$' -bench ExecSegments -benchtime 1x ./e2e/
func BenchmarkExecSegments(b *testing.B) {
	d := harness.Start(b, harness.Options{Env: []string{"SVC_LOG_LEVEL=warn"}})
	plat := startPlatformProcess(b)
	client := benchHTTPClient()
	get := func(url string) func() {
		return func() {
			resp, err := client.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("GET %s: %d", url, resp.StatusCode)
			}
		}
	}
	post := func(body string, want int, mustContain string) func() {
		return func() {
			req, _ := http.NewRequest("POST", d.URL+"/v1/exec", bytes.NewReader([]byte(body)))
			req.Header.Set("Authorization", "Bearer "+d.Token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want || !bytes.Contains(out, []byte(mustContain)) {
				b.Fatalf("POST /v1/exec %s: %d %s", body, resp.StatusCode, out)
			}
		}
	}
	run := func(name string, args ...string) func() {
		return func() {
			if err := exec.Command(name, args...).Run(); err != nil {
				b.Fatal(err)
			}
		}
	}
	segs := []benchfig.Leg{
		{Name: "direct_true", Fn: run("true")},
		{Name: "direct_sh_true", Fn: run("/bin/sh", "-c", "true")},
		{Name: "bare_http", Fn: get(plat.URL + "/api/echo")},
		{Name: "healthz", Fn: get(d.URL + "/healthz")},
		{Name: "http_refused", Fn: post(`{"command":"  "}`, http.StatusUnprocessableEntity, `"missing_field"`)},
		{Name: "hop_refused", Fn: post(`{"command":"true","cwd":"/nonexistent-svcd-bench"}`, http.StatusOK, `"cwd_not_found"`)},
		{Name: "api_true", Fn: post(`{"command":"true"}`, http.StatusOK, `"data":{"ok":true`)},
	}
	benchfig.InterleaveLegs(b, "SEGMENT", benchfig.Samples(2000)/4, segs)
}
