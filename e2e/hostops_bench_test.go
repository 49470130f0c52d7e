package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// The host-operation benchmarks time each API call against the direct call
// it wraps, alternating the two in the same run so machine noise hits both.
// They report median and p99 of each and their ratios. Run them with enough
// iterations for a p99 to mean something:
//
//	go test -run '^$' -bench Hostops -benchtime 400x ./e2e/   (scripts/bench-hostops)

func BenchmarkHostopsExecTrue(b *testing.B) {
	d := harness.Start(b, harness.Options{})
	client := benchHTTPClient()
	body := []byte(`{"command":"true"}`)
	call := func() {
		res := benchPost(b, client, d, "/v1/exec", body)
		if !bytes.Contains(res, []byte(`"data":{"ok":true`)) {
			b.Fatalf("exec true: %s", res)
		}
	}
	direct := func() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	benchPair(b, "exec true", call, direct)
}

func BenchmarkHostopsFileRead1MiB(b *testing.B) {
	d := harness.Start(b, harness.Options{})
	path := filepath.Join(b.TempDir(), "1mib.txt")
	content := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB of text
	if err := os.WriteFile(path, content, 0o644); err != nil {
		b.Fatal(err)
	}
	client := benchHTTPClient()
	body, _ := json.Marshal(map[string]any{"path": path})
	call := func() {
		res := benchPost(b, client, d, "/v1/files/read", body)
		if len(res) < 1<<20 {
			b.Fatalf("read returned %d bytes: %.200s", len(res), res)
		}
	}
	direct := func() {
		got, err := os.ReadFile(path)
		if err != nil || len(got) != 1<<20 {
			b.Fatal(err)
		}
	}
	benchPair(b, "read 1 MiB", call, direct)
}

func BenchmarkHostopsFileWrite1MiB(b *testing.B) {
	d := harness.Start(b, harness.Options{})
	dir := b.TempDir()
	apiPath, directPath := filepath.Join(dir, "api.txt"), filepath.Join(dir, "direct.txt")
	content := strings.Repeat("0123456789abcdef", 1<<16)
	client := benchHTTPClient()
	body, _ := json.Marshal(map[string]any{"path": apiPath, "content": content})
	call := func() {
		res := benchPost(b, client, d, "/v1/files/write", body)
		if !bytes.Contains(res, []byte(`"data":{"ok":true`)) {
			b.Fatalf("write: %s", res)
		}
	}
	// The direct baseline is a plain os.WriteFile; the API additionally
	// fsyncs the file and its folder and renames (atomic replace).
	direct := func() {
		if err := os.WriteFile(directPath, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	benchPair(b, "write 1 MiB", call, direct)
}

func benchHTTPClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
}

func benchPost(b *testing.B, c *http.Client, d *harness.Daemon, path string, body []byte) []byte {
	req, _ := http.NewRequest("POST", d.URL+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+d.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		b.Fatalf("%s: %d %s", path, resp.StatusCode, out)
	}
	return out
}

// benchPair alternates api and direct b.N times (after a short warm-up) and
// reports both distributions and their ratio.
func benchPair(b *testing.B, name string, api, direct func()) {
	for i := 0; i < 5; i++ {
		api()
		direct()
	}
	apiT := make([]time.Duration, 0, b.N)
	directT := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		api()
		apiT = append(apiT, time.Since(t0))
		t0 = time.Now()
		direct()
		directT = append(directT, time.Since(t0))
	}
	b.StopTimer()
	am, ap := quantiles(apiT)
	dm, dp := quantiles(directT)
	b.ReportMetric(us(am), "api-median-µs")
	b.ReportMetric(us(ap), "api-p99-µs")
	b.ReportMetric(us(dm), "direct-median-µs")
	b.ReportMetric(us(dp), "direct-p99-µs")
	b.ReportMetric(float64(am)/float64(dm), "ratio-median")
	b.ReportMetric(float64(ap)/float64(dp), "ratio-p99")
	line := fmt.Sprintf("%-12s n=%-5d API median %8.1f µs p99 %8.1f µs | direct median %8.1f µs p99 %8.1f µs | ratio median %.1fx p99 %.1fx",
		name, b.N, us(am), us(ap), us(dm), us(dp), float64(am)/float64(dm), float64(ap)/float64(dp))
	b.Log(line)
	if b.N > 1 { // skip the framework's one-iteration probe run
		fmt.Fprintln(os.Stderr, "FIGURES "+line)
	}
}

func quantiles(ds []time.Duration) (median, p99 time.Duration) {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration {
		i := int(q*float64(len(s)-1) + 0.5)
		return s[i]
	}
	return at(0.5), at(0.99)
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
