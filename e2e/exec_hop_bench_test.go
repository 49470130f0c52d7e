package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/benchfig"
	"github.com/svcd/svcd/e2e/harness"
)

// BenchmarkExecHopSteps shows what the exec hop (issue 24 E2: exec over a
// private socketpair to the hostops worker instead of a gRPC stream) does to
// P3, every leg interleaved round-robin in one run:
//
//	direct_true        fork/exec of `true` (P3's baseline)
//	grpc_true          POST /v1/exec of `true`, daemon with SVCD_EXEC_HOP=off
//	                   (the gRPC stream, as before the hop)
//	stream_true        the hop with Started on its stream, daemon with
//	                   SVCD_EXEC_HOP=stream (the hop's first step)
//	hop_true           the same on a default daemon (the hop, Started on
//	                   its notes): P3's subject
//	grpc_refused       POST /v1/exec whose cwd does not exist: HTTP + the
//	hop_refused        worker round trip, nothing started, on each daemon
//	hop_sandbox_off    hop_true on a daemon with exec_sandbox = "off"
//	shell_true         hop_true through /bin/sh, daemon with
//	                   SVCD_EXEC_DIRECT=off (before plain commands ran
//	                   without the shell; `true` is then dash's builtin)
//	direct_uname       fork/exec of `uname` (a program, not a builtin)
//	hop_uname          POST /v1/exec of `uname` (run without the shell)
//	shell_uname        the same through /bin/sh (two program starts)
//
// Each line prints the p50 and its ratio to direct_true.
// SVC_BENCH_LEGS=stream_true,hop_true keeps direct_true and those legs only
// (more samples of a small difference in the same time).
//
//	go test -run '^$' -bench ExecHopSteps -benchtime 1x ./e2e/
func BenchmarkExecHopSteps(b *testing.B) {
	grpcD := harness.Start(b, harness.Options{Env: []string{"SVC_LOG_LEVEL=warn", "SVCD_EXEC_HOP=off"}})
	streamD := harness.Start(b, harness.Options{Env: []string{"SVC_LOG_LEVEL=warn", "SVCD_EXEC_HOP=stream"}})
	hopD := harness.Start(b, harness.Options{Env: []string{"SVC_LOG_LEVEL=warn"}})
	offD := harness.Start(b, harness.Options{Env: []string{"SVC_LOG_LEVEL=warn", "SVC_EXEC_SANDBOX=off"}})
	shellD := harness.Start(b, harness.Options{Env: []string{"SVC_LOG_LEVEL=warn", "SVCD_EXEC_DIRECT=off"}})
	client := benchHTTPClient()
	post := func(d *harness.Daemon, body, mustContain string) func() {
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
			if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(mustContain)) {
				b.Fatalf("POST /v1/exec %s: %d %s", body, resp.StatusCode, out)
			}
		}
	}
	const execTrue, refused, execUname = `{"command":"true"}`, `{"command":"true","cwd":"/nonexistent-svcd-bench"}`, `{"command":"uname"}`
	legs := []benchfig.Leg{
		{Name: "direct_true", Fn: func() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}},
		{Name: "grpc_true", Fn: post(grpcD, execTrue, `"data":{"ok":true`)},
		{Name: "stream_true", Fn: post(streamD, execTrue, `"data":{"ok":true`)},
		{Name: "hop_true", Fn: post(hopD, execTrue, `"data":{"ok":true`)},
		{Name: "grpc_refused", Fn: post(grpcD, refused, `"cwd_not_found"`)},
		{Name: "hop_refused", Fn: post(hopD, refused, `"cwd_not_found"`)},
		{Name: "hop_sandbox_off", Fn: post(offD, execTrue, `"data":{"ok":true`)},
		{Name: "shell_true", Fn: post(shellD, execTrue, `"data":{"ok":true`)},
		{Name: "direct_uname", Fn: func() {
			if err := exec.Command("uname").Run(); err != nil {
				b.Fatal(err)
			}
		}},
		{Name: "hop_uname", Fn: post(hopD, execUname, `"data":{"ok":true`)},
		{Name: "shell_uname", Fn: post(shellD, execUname, `"data":{"ok":true`)},
	}
	if only := os.Getenv("SVC_BENCH_LEGS"); only != "" {
		keep := legs[:1]
		for _, l := range legs[1:] {
			if slices.Contains(strings.Split(only, ","), l.Name) {
				keep = append(keep, l)
			}
		}
		legs = keep
	}
	benchfig.InterleaveLegs(b, "HOPSTEP", benchfig.Samples(2000)/4, legs)
}
