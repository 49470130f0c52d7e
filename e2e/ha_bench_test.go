package e2e

import (
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkFailover measures the time from SIGKILL of the leader to the
// first write acknowledged by the new leader, with svcd's tuned raft timings
// against hashicorp/raft's library defaults (1 s heartbeat and election
// timeouts) in the same run. One iteration is one failover of a fresh
// two-node + witness cluster; run it with -benchtime=10x and read the
// median_ms metric:
//
//	go test -run='^$' -bench=BenchmarkFailover -benchtime=10x ./e2e/
func BenchmarkFailover(b *testing.B) {
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"baseline_library_timings", []string{"SVC_RAFT_HEARTBEAT_TIMEOUT_MS=1000", "SVC_RAFT_ELECTION_TIMEOUT_MS=1000", "SVC_RAFT_LEASE_TIMEOUT_MS=500"}},
		{"tuned", nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var samples []time.Duration
			for i := 0; i < b.N; i++ {
				samples = append(samples, oneFailover(b, tc.env))
			}
			sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
			b.ReportMetric(float64(samples[len(samples)/2].Milliseconds()), "median_ms")
			b.ReportMetric(float64(samples[len(samples)-1].Milliseconds()), "max_ms")
		})
	}
}

func oneFailover(b *testing.B, env []string) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	c := startHAClusterEnv(b, env)
	defer c.stop()
	client := &http.Client{Timeout: 2 * time.Second}
	write := func() bool {
		req, _ := http.NewRequest("POST", c.n2.URL+"/v1/system/pause", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	if !write() {
		b.Fatal("the cluster does not take writes before the kill")
	}
	start := time.Now()
	c.n1.Kill()
	for !write() {
		if time.Since(start) > 30*time.Second {
			b.Fatal("no write acknowledged within 30 s of the kill")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}
