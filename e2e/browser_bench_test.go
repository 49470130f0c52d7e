package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// benchRig is a real daemon (with its relay worker), a fake platform and a
// fake plugin relaying to it, all on loopback.
type benchRig struct {
	d      *harness.Daemon
	plat   *fakeplugin.Platform
	client *http.Client
}

func newBenchRig(b *testing.B) *benchRig {
	b.Helper()
	d := harness.Start(b, harness.Options{Env: []string{
		"SVC_RELAY_WINDOW_MAX=1000000000", "SVC_RELAY_MAX_IN_FLIGHT=1024", "SVC_LOG_LEVEL=warn",
	}})
	plat := fakeplugin.NewPlatform("bench")
	b.Cleanup(plat.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, _, err := fakeplugin.Dial(ctx, fakeplugin.Options{URL: "ws://" + d.Addr + "/ws/browser", Token: d.Token, ClientID: "bench",
		Platforms: map[string]string{bridgeproto.PlatformB: plat.URL}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return &benchRig{d: d, plat: plat, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
}

func (r *benchRig) direct(b *testing.B) {
	resp, err := r.client.Get(r.plat.URL + "/api/echo")
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("direct: %d", resp.StatusCode)
	}
}

const benchRelayBody = `{"platform":"platform_b","path":"/api/echo","clientId":"bench"}`

func (r *benchRig) bridged(b *testing.B) {
	resp, err := r.client.Post(r.d.URL+"/v1/browser/request", "application/json", strings.NewReader(benchRelayBody))
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("bridged: %d %s", resp.StatusCode, body)
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkBrowserRelayVsDirect: each op is one direct GET to the fake
// platform and one buffered relay of the same request through daemon,
// relay worker, WebSocket and plugin. Both are measured in the same run, so
// the ratio is what to compare across machines.
func BenchmarkBrowserRelayVsDirect(b *testing.B) {
	r := newBenchRig(b)
	for i := 0; i < 50; i++ { // warm connections and the worker
		r.direct(b)
		r.bridged(b)
	}
	direct := make([]time.Duration, 0, b.N)
	bridged := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r.direct(b)
		t1 := time.Now()
		r.bridged(b)
		direct = append(direct, t1.Sub(t0))
		bridged = append(bridged, time.Since(t1))
	}
	b.StopTimer()
	sum := func(d []time.Duration) (s time.Duration) {
		for _, x := range d {
			s += x
		}
		return
	}
	b.ReportMetric(float64(percentile(direct, 0.50).Microseconds()), "direct_p50_us")
	b.ReportMetric(float64(percentile(direct, 0.99).Microseconds()), "direct_p99_us")
	b.ReportMetric(float64(percentile(bridged, 0.50).Microseconds()), "bridge_p50_us")
	b.ReportMetric(float64(percentile(bridged, 0.99).Microseconds()), "bridge_p99_us")
	b.ReportMetric(float64(b.N)/sum(direct).Seconds(), "direct_req/s")
	b.ReportMetric(float64(b.N)/sum(bridged).Seconds(), "bridge_req/s")
	b.ReportMetric(float64(percentile(bridged, 0.50))/float64(percentile(direct, 0.50)), "p50_ratio")
}

// BenchmarkBrowserRelayParallel: throughput with 16 concurrent callers,
// direct and bridged in the same run.
func BenchmarkBrowserRelayParallel(b *testing.B) {
	r := newBenchRig(b)
	const workers = 16
	run := func(fn func(*testing.B)) float64 {
		var wg sync.WaitGroup
		per := max(1, b.N/workers)
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					fn(b)
				}
			}()
		}
		wg.Wait()
		return float64(per*workers) / time.Since(start).Seconds()
	}
	run(r.direct)
	run(r.bridged)
	b.ResetTimer()
	d := run(r.direct)
	br := run(r.bridged)
	b.StopTimer()
	b.ReportMetric(d, "direct_req/s")
	b.ReportMetric(br, "bridge_req/s")
	b.ReportMetric(d/br, "throughput_ratio")
}

// BenchmarkBrowserSSE: each op relays a stream of 1000 events from the fake
// platform through the plugin and the daemon to an SSE caller.
func BenchmarkBrowserSSE(b *testing.B) {
	r := newBenchRig(b)
	const n = 1000
	body, _ := json.Marshal(map[string]any{"platform": "platform_b", "path": "/api/stream?n=1000", "responseMode": "sse", "clientId": "bench"})
	events := 0
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		resp, err := r.client.Post(r.d.URL+"/v1/browser/request", "application/json", strings.NewReader(string(body)))
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		got, ended := 0, false
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
			b.Fatalf("stream: %d events, end %v", got, ended)
		}
		events += got
	}
	b.StopTimer()
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
}
