package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/benchfig"
	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// The BenchmarkPerf* benchmarks produce the figures of docs/performance.md
// (issue 15's table). Each takes its own samples (SVC_BENCH_SAMPLES, run
// with -benchtime=1x) and reports them through benchfig against a baseline
// measured in the same run. `make bench` runs them all.

// perfRig is a real daemon with its relay worker, a fake platform in a
// separate process and a fake plugin relaying to it.
type perfRig struct {
	d      *harness.Daemon
	plat   platformProcess
	client *http.Client
}

func newPerfRig(b *testing.B, env ...string) *perfRig {
	b.Helper()
	d := harness.Start(b, harness.Options{Env: append([]string{
		"SVC_RELAY_WINDOW_MAX=1000000000", "SVC_RELAY_MAX_IN_FLIGHT=1024", "SVC_LOG_LEVEL=warn",
	}, env...)})
	plat := startPlatformProcess(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, _, err := fakeplugin.Dial(ctx, fakeplugin.Options{URL: "ws://" + d.Addr + "/ws/browser", Token: d.Token, ClientID: "bench",
		Platforms: map[string]string{bridgeproto.PlatformB: plat.URL}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return &perfRig{d: d, plat: plat, client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
}

func (r *perfRig) get(b *testing.B, url string) []byte {
	resp, err := r.client.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return body
}

func (r *perfRig) relay(b *testing.B, body string) *http.Response {
	req, _ := http.NewRequest("POST", r.d.URL+"/v1/browser/request", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	return resp
}

func (r *perfRig) relayBuffered(b *testing.B) {
	resp := r.relay(b, benchRelayBody)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`/api/echo`)) {
		b.Fatalf("relay: %d %s", resp.StatusCode, body)
	}
}

// BenchmarkPerfP1Relay: a buffered relay through daemon, relay worker,
// WebSocket and plugin against a direct GET of the same upstream from
// another process (the cross-process direct baseline). Latency is measured
// one call at a time, throughput with 16 concurrent callers.
func BenchmarkPerfP1Relay(b *testing.B) {
	r := newPerfRig(b)
	direct := func() { r.get(b, r.plat.URL+"/api/echo") }
	relayed := func() { r.relayBuffered(b) }
	n := benchfig.Samples(2000)
	for i := 0; i < 100; i++ {
		direct()
		relayed()
	}
	sw := threadSwitches(b, r.d.Pid())
	dl, rl := benchfig.Alternate(n, direct, relayed)
	perRequest := float64(threadSwitches(b, r.d.Pid())-sw) / float64(n)
	dp, dwall := benchfig.Parallel(n, 16, direct)
	rp, rwall := benchfig.Parallel(n, 16, relayed)
	base, subj := benchfig.Summarize("direct", dl, 0), benchfig.Summarize("relay", rl, 0)
	base.ReqPerS = benchfig.Summarize("", dp, dwall).ReqPerS
	subj.ReqPerS = benchfig.Summarize("", rp, rwall).ReqPerS
	benchfig.Report(b, benchfig.Figure{ID: "P1", Name: "buffered relay vs cross-process direct HTTP",
		Goal: "p50 <= 3x; >= 6000 req/s", Baseline: base, Subject: subj,
		Extra: map[string]float64{"daemon_switches_per_request": perRequest},
		Note: "latency sequential; req/s with 16 concurrent callers; daemon_switches_per_request: " +
			"context switches of the daemon's threads per sequential relay"})
}

// BenchmarkPerfP1Metrics: what metrics cost P1. The same buffered relay
// through two daemons, one with metrics on (the default) and one started
// with SVCD_METRICS_OFF=1 (no request counting in the supervisor, no gRPC
// interceptors in its workers), alternated one call at a time, then 16
// concurrent callers each. Goal (issue 22): less than 3% apart.
func BenchmarkPerfP1Metrics(b *testing.B) {
	on := newPerfRig(b)
	off := newPerfRig(b, "SVCD_METRICS_OFF=1")
	withOn, withOff := func() { on.relayBuffered(b) }, func() { off.relayBuffered(b) }
	n := benchfig.Samples(2000)
	for i := 0; i < 100; i++ {
		withOn()
		withOff()
	}
	offl, onl := benchfig.Alternate(n, withOff, withOn)
	// Rounds alternating which side goes first: load from elsewhere lands
	// on both.
	offp, offw, onp, onw := benchfig.AlternateRounds(n, 4, 16, withOff, withOn)
	base, subj := benchfig.Summarize("metrics off", offl, 0), benchfig.Summarize("metrics on", onl, 0)
	base.ReqPerS = benchfig.Summarize("", offp, offw).ReqPerS
	subj.ReqPerS = benchfig.Summarize("", onp, onw).ReqPerS
	benchfig.Report(b, benchfig.Figure{ID: "P1metrics", Name: "buffered relay, metrics on vs off", Goal: "within 3%",
		Baseline: base, Subject: subj, Note: "latency alternated call by call; req/s with 16 concurrent callers in 4 rounds, each side first in turn"})
}

// BenchmarkPerfP1Floor: P1's floor on this machine. The relay skeleton
// (relayskeleton_test.go: the same legs, fake plugin and platform, none of
// the daemon's work) against the same cross-process direct baseline, with
// the daemon's relay alternated in the same run.
func BenchmarkPerfP1Floor(b *testing.B) {
	r := newPerfRig(b)
	sk, skPid := startSkeletonProcess(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, _, err := fakeplugin.Dial(ctx, fakeplugin.Options{URL: "ws" + strings.TrimPrefix(sk, "http") + "/ws/browser", ClientID: "bench",
		Platforms: map[string]string{bridgeproto.PlatformB: r.plat.URL}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	direct := func() { r.get(b, r.plat.URL+"/api/echo") }
	skeleton := func() {
		resp, err := r.client.Post(sk+"/v1/browser/request", "application/json", strings.NewReader(benchRelayBody))
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`/api/echo`)) {
			b.Fatalf("skeleton: %d %s", resp.StatusCode, body)
		}
	}
	relayed := func() { r.relayBuffered(b) }
	n := benchfig.Samples(2000)
	for i := 0; i < 100; i++ {
		direct()
		skeleton()
		relayed()
	}
	var dl, sl, rl []time.Duration
	skSw, dSw := threadSwitches(b, skPid), threadSwitches(b, r.d.Pid())
	for i := 0; i < n; i++ {
		for _, side := range []struct {
			fn  func()
			out *[]time.Duration
		}{{direct, &dl}, {skeleton, &sl}, {relayed, &rl}} {
			t0 := time.Now()
			side.fn()
			*side.out = append(*side.out, time.Since(t0))
		}
	}
	skSw, dSw = threadSwitches(b, skPid)-skSw, threadSwitches(b, r.d.Pid())-dSw
	base, subj, daemon := benchfig.Summarize("direct", dl, 0), benchfig.Summarize("skeleton", sl, 0), benchfig.Summarize("", rl, 0)
	benchfig.Report(b, benchfig.Figure{ID: "P1floor", Name: "relay skeleton (P1's floor) vs cross-process direct HTTP",
		Goal: "none: says how far below P1's goal the architecture's floor is", Baseline: base, Subject: subj,
		Extra: map[string]float64{"daemon_relay_p50_us": daemon.P50us, "daemon_relay_ratio_p50": daemon.P50us / base.P50us,
			"daemon_over_skeleton_p50_us":   daemon.P50us - subj.P50us,
			"skeleton_switches_per_request": float64(skSw) / float64(n), "daemon_switches_per_request": float64(dSw) / float64(n)},
		Note: "direct, skeleton and the daemon's relay alternated, one call at a time"})
}

// BenchmarkPerfP2SSE: an SSE relay. The figure's latency is a whole
// one-event stream (request set-up included), relayed against read directly
// from the platform; Extra holds the events/s of a 1000-event stream both
// ways, and the latency the bridge adds to each event of a running stream
// (per_event_added_p50_us, see perEventLatency).
func BenchmarkPerfP2SSE(b *testing.B) {
	r := newPerfRig(b)
	sse := func(n int) string {
		body, _ := json.Marshal(map[string]any{"platform": "platform_b", "path": "/api/stream?n=" + strconv.Itoa(n),
			"responseMode": "sse", "clientId": "bench"})
		return string(body)
	}
	relayed := func(n int) func() {
		body := sse(n)
		return func() {
			resp := r.relay(b, body)
			got, ended := 0, false
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				switch sc.Text() {
				case "event: stream_event":
					got++
				case "event: stream_end":
					ended = true
				}
			}
			resp.Body.Close()
			if got != n || !ended {
				b.Fatalf("relayed stream: %d of %d events, end %v", got, n, ended)
			}
		}
	}
	direct := func(n int) func() {
		url := r.plat.URL + "/api/stream?n=" + strconv.Itoa(n)
		return func() {
			if got := bytes.Count(r.get(b, url), []byte("data: ")); got != n {
				b.Fatalf("direct stream: %d of %d events", got, n)
			}
		}
	}
	samples := benchfig.Samples(2000)
	for i := 0; i < 50; i++ {
		direct(1)()
		relayed(1)()
	}
	dl, rl := benchfig.Alternate(samples, direct(1), relayed(1))
	const events, streams = 1000, 20
	db, rb := benchfig.Alternate(streams, direct(events), relayed(events))
	perSec := func(ds []time.Duration) float64 {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		return float64(events*len(ds)) / sum.Seconds()
	}
	sw := threadSwitches(b, r.d.Pid())
	de, re := perEventLatency(b, r, samples)
	perEvent := float64(threadSwitches(b, r.d.Pid())-sw) / float64(len(re))
	base, subj := benchfig.Summarize("direct", dl, 0), benchfig.Summarize("relay", rl, 0)
	ebase, esubj := benchfig.Summarize("", de, 0), benchfig.Summarize("", re, 0)
	benchfig.Report(b, benchfig.Figure{ID: "P2", Name: "SSE through the bridge vs direct",
		Goal: ">= 50000 events/s; added p50 <= 0.2 ms", Baseline: base, Subject: subj,
		Extra: map[string]float64{"relay_events_per_s": perSec(rb), "direct_events_per_s": perSec(db),
			"one_event_stream_added_p50_us": subj.P50us - base.P50us,
			"per_event_added_p50_us":        esubj.P50us - ebase.P50us,
			"per_event_relay_p50_us":        esubj.P50us, "per_event_relay_p99_us": esubj.P99us,
			"per_event_direct_p50_us": ebase.P50us, "per_event_direct_p99_us": ebase.P99us,
			"daemon_switches_per_event": perEvent},
		Note: "latency (p50/p95/p99 above): a whole one-event stream, request set-up included; " +
			"per_event: each event of a running stream, platform write -> caller read, 1 ms apart; " +
			"daemon_switches_per_event: context switches of the daemon's threads per relayed event, " +
			"each stream's set-up spread over its 20 events"})
}

// perEventLatency measures what the bridge adds to each event of a running
// stream: the platform stamps every event with the wall clock when it wrote
// it (events 1 ms apart, so each one travels alone, as a model's tokens do),
// and the caller takes the time each event reaches it. The first event of a
// stream travels with the stream's set-up and is left out. Relayed and
// direct streams alternate; it returns each event's latency, direct then
// relayed.
func perEventLatency(b *testing.B, r *perfRig, samples int) (direct, relayed []time.Duration) {
	const perStream = 21
	path := "/api/stream?stamp=1&delay_ms=1&n=" + strconv.Itoa(perStream)
	read := func(body io.Reader, into *[]time.Duration) {
		sc := bufio.NewScanner(body)
		seen := 0
		for sc.Scan() {
			now := time.Now().UnixNano()
			line := sc.Bytes()
			stamp, ok, err := benchfig.EventStamp(line)
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				continue
			}
			if seen++; seen > 1 {
				*into = append(*into, time.Duration(now-stamp))
			}
		}
		if seen != perStream {
			b.Fatalf("stamped stream: %d of %d events", seen, perStream)
		}
	}
	body, _ := json.Marshal(map[string]any{"platform": "platform_b", "path": path, "responseMode": "sse", "clientId": "bench"})
	direct = make([]time.Duration, 0, samples)
	relayed = make([]time.Duration, 0, samples)
	streams := max(samples/(perStream-1), 5)
	benchfig.Alternate(streams, func() {
		resp, err := r.client.Get(r.plat.URL + path)
		if err != nil {
			b.Fatal(err)
		}
		read(resp.Body, &direct)
		resp.Body.Close()
	}, func() {
		resp := r.relay(b, string(body))
		read(resp.Body, &relayed)
		resp.Body.Close()
	})
	return direct, relayed
}

func execTrue(b *testing.B, client *http.Client, d *harness.Daemon) func() {
	body := []byte(`{"command":"true"}`)
	return func() {
		res := benchPost(b, client, d, "/v1/exec", body)
		if !bytes.Contains(res, []byte(`"data":{"ok":true`)) {
			b.Fatalf("exec true: %s", res)
		}
	}
}

// BenchmarkPerfP3Exec: POST /v1/exec of `true` against fork/exec of `true`
// from the benchmark process.
func BenchmarkPerfP3Exec(b *testing.B) {
	d := harness.Start(b, harness.Options{Env: []string{"SVC_LOG_LEVEL=warn"}})
	client := benchHTTPClient()
	api := execTrue(b, client, d)
	direct := func() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	n := benchfig.Samples(2000) / 4
	for i := 0; i < 20; i++ {
		direct()
		api()
	}
	dl, al := benchfig.Alternate(n, direct, api)
	benchfig.Report(b, benchfig.Figure{ID: "P3", Name: "POST /v1/exec true vs direct fork/exec", Goal: "p50 <= 1.3x",
		Baseline: benchfig.Summarize("direct", dl, 0), Subject: benchfig.Summarize("api", al, 0)})
}

// BenchmarkPerfP3Sandbox: P3 with the exec sandbox on (the default,
// best-effort: a cgroup per command, Landlock, no_new_privs) and off
// (exec_sandbox = "off": the process group only), two daemons and the
// direct fork/exec baseline alternated in one run. The goal: the P3 ratio
// with the sandbox on within +0.15 of the ratio with it off.
func BenchmarkPerfP3Sandbox(b *testing.B) {
	on := harness.Start(b, harness.Options{Env: []string{"SVC_LOG_LEVEL=warn"}})
	off := harness.Start(b, harness.Options{Env: []string{"SVC_LOG_LEVEL=warn", "SVC_EXEC_SANDBOX=off"}})
	client := benchHTTPClient()
	onF, offF := execTrue(b, client, on), execTrue(b, client, off)
	direct := func() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	n := benchfig.Samples(2000) / 4
	for i := 0; i < 20; i++ {
		direct()
		offF()
		onF()
	}
	var dl, ol, nl []time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		direct()
		t1 := time.Now()
		offF()
		t2 := time.Now()
		onF()
		dl, ol, nl = append(dl, t1.Sub(t0)), append(ol, t2.Sub(t1)), append(nl, time.Since(t2))
	}
	d, o, s := benchfig.Summarize("direct", dl, 0), benchfig.Summarize("sandbox_off", ol, 0), benchfig.Summarize("sandbox_on", nl, 0)
	offRatio, onRatio := o.P50us/d.P50us, s.P50us/d.P50us
	benchfig.Report(b, benchfig.Figure{ID: "P3s", Name: "P3 exec true with the sandbox on vs off", Goal: "P3 ratio on <= off + 0.15",
		Baseline: o, Subject: s, Extra: map[string]float64{"p3_ratio_off": offRatio, "p3_ratio_on": onRatio, "p3_ratio_delta": onRatio - offRatio,
			"added_p50_us": s.P50us - o.P50us, "direct_p50_us": d.P50us}})
}

// BenchmarkPerfP3bExecLimits: exec with resource limits configured against
// plain exec, two daemons alternated in the same run.
func BenchmarkPerfP3bExecLimits(b *testing.B) {
	plain := harness.Start(b, harness.Options{Env: []string{"SVC_LOG_LEVEL=warn"}})
	limited := harness.Start(b, harness.Options{Env: []string{"SVC_LOG_LEVEL=warn", "SVC_EXEC_RLIMITS=nofile=256,core=0,cpu=60"}})
	client := benchHTTPClient()
	p, l := execTrue(b, client, plain), execTrue(b, client, limited)
	n := benchfig.Samples(2000) / 4
	for i := 0; i < 20; i++ {
		p()
		l()
	}
	pl, ll := benchfig.Alternate(n, p, l)
	base, subj := benchfig.Summarize("plain", pl, 0), benchfig.Summarize("limited", ll, 0)
	benchfig.Report(b, benchfig.Figure{ID: "P3b", Name: "exec with rlimits vs plain exec", Goal: "added p50 <= 1 ms",
		Baseline: base, Subject: subj, Extra: map[string]float64{"added_p50_us": subj.P50us - base.P50us}})
}

// BenchmarkPerfP7Restart: SIGKILL the hostops worker after a calm period and
// time until an exec succeeds again. The baseline is the floor of any
// restart: starting the svcd binary (`svcd version`) and waiting for it.
// The daemon is told a worker is healthy after 1 s of uptime, and each kill
// follows 1.5 s of calm, so every kill should be a first-crash restart.
func BenchmarkPerfP7Restart(b *testing.B) {
	d := harness.Start(b, harness.Options{Env: []string{"SVC_LOG_LEVEL=warn", "SVC_WORKER_HEALTHY_AFTER_MS=1000"}})
	client := &http.Client{Timeout: 20 * time.Second}
	kills := benchfig.Samples(2000) / 250
	if kills < 3 {
		kills = 3
	}
	var base, subj []time.Duration
	failed := 0
	for i := 0; i < kills; i++ {
		t0 := time.Now()
		if err := exec.Command(harness.Binary(b), "version").Run(); err != nil {
			b.Fatal(err)
		}
		base = append(base, time.Since(t0))
		time.Sleep(1500 * time.Millisecond)
		w := hostopsWorker(b, d)
		if w.Pid == 0 {
			b.Fatalf("hostops not running: %+v", w)
		}
		t0 = time.Now()
		if err := syscall.Kill(w.Pid, syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		deadline := t0.Add(15 * time.Second)
		for {
			if execOnce(client, d) && hostopsWorker(b, d).Pid != w.Pid {
				break
			}
			if time.Now().After(deadline) {
				failed++
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		subj = append(subj, time.Since(t0))
		if failed > 0 {
			break // a failed (crash-looping) worker stays down
		}
	}
	benchfig.Report(b, benchfig.Figure{ID: "P7", Name: "hostops SIGKILL after calm -> serving again vs svcd process start",
		Goal: "every kill <= 300 ms", Baseline: benchfig.Summarize("svcd version", base, 0), Subject: benchfig.Summarize("restart", subj, 0),
		Extra: map[string]float64{"max_ms": float64(maxDur(subj).Microseconds()) / 1e3, "not_back_within_15s": float64(failed)}})
}

func execOnce(c *http.Client, d *harness.Daemon) bool {
	req, _ := http.NewRequest("POST", d.URL+"/v1/exec", strings.NewReader(`{"command":"true"}`))
	req.Header.Set("Authorization", "Bearer "+d.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode == 200 && bytes.Contains(body, []byte(`"data":{"ok":true`))
}

func maxDur(ds []time.Duration) (m time.Duration) {
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// BenchmarkPerfP8IdleRSS: resident memory of the idle supervisor and all
// four workers (agentd spawned too), against one bare Go HTTP server process
// (the fake platform child) as the per-process floor.
func BenchmarkPerfP8IdleRSS(b *testing.B) {
	d := harness.Start(b, harness.Options{Env: []string{"SVC_LOG_LEVEL=warn",
		"SVC_AGENTD_SPAWN=true", "SVC_AGENTD_LISTEN=" + harness.FreePort(b)}})
	plat := startPlatformProcess(b)
	pids := []int{d.Pid()}
	deadline := time.Now().Add(20 * time.Second)
	for len(pids) < 5 {
		if time.Now().After(deadline) {
			b.Fatalf("want the supervisor and four running workers, have pids %v:\n%s", pids, d.Logs())
		}
		time.Sleep(100 * time.Millisecond)
		pids = pids[:1]
		for _, w := range workersOf(b, d) {
			if w.Pid != 0 {
				pids = append(pids, w.Pid)
			}
		}
	}
	time.Sleep(2 * time.Second) // let start-up garbage be collected
	rss, pss, anon := 0.0, 0.0, 0.0
	for _, pid := range pids {
		rss += memMB(b, pid, "status", "VmRSS:")
		pss += memMB(b, pid, "smaps_rollup", "Pss:")
		anon += memMB(b, pid, "smaps_rollup", "Anonymous:")
	}
	floor := memMB(b, plat.Pid, "status", "VmRSS:")
	// RSS counts the pages of the svcd binary that every worker shares with
	// the supervisor once per process (the kernel maps whole cached folios,
	// so nearly all of its text and read-only data); PSS splits shared pages
	// between the processes mapping them, so its sum is what they really
	// cost together: their own memory (anonymous) plus the binary once.
	benchfig.Report(b, benchfig.Figure{ID: "P8", Name: "idle memory, supervisor + all four workers", Goal: "<= 60 MB with all four workers",
		Extra: map[string]float64{"total_rss_mb": rss, "total_pss_mb": pss, "total_anon_mb": anon, "processes": float64(len(pids)),
			"bare_go_process_rss_mb": floor, "ratio_rss_to_bare_per_process": rss / (floor * float64(len(pids)))}})
}

// memMB reads a kB field of /proc/PID/FILE in MB.
func memMB(b *testing.B, pid int, file, field string) float64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	b.Fatalf("no %s in /proc/%d/%s", field, pid, file)
	return 0
}

// threadSwitches is the context switches (voluntary and not) of every
// thread of process pid so far: the wake-ups a figure costs that process,
// read before and after its samples.
func threadSwitches(b *testing.B, pid int) int64 {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, t := range tasks {
		raw, err := os.ReadFile(dir + "/" + t.Name() + "/status")
		if err != nil {
			continue // the thread exited since ReadDir
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if f := strings.Fields(line); len(f) == 2 && strings.HasSuffix(f[0], "ctxt_switches:") {
				v, _ := strconv.ParseInt(f[1], 10, 64)
				n += v
			}
		}
	}
	return n
}
