// Package benchfig turns benchmark samples into the figures of the
// performance table (docs/performance.md): a subject measured against a
// baseline taken in the same run, each with p50/p95/p99 and req/s, and their
// ratio. Absolute numbers on a shared machine are noise; the ratio is what
// two runs compare.
//
// A figure is printed as one "FIGURE {json}" line on stderr and, when
// SVC_BENCH_OUT names a file, appended to it as one JSON line; scripts/bench
// gathers those lines into bench-results/<timestamp>.json.
package benchfig

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
)

// OutEnv names the JSON-lines file figures are appended to.
const OutEnv = "SVC_BENCH_OUT"

// SamplesEnv overrides the number of samples a figure takes.
const SamplesEnv = "SVC_BENCH_SAMPLES"

// Samples is how many samples to take: SVC_BENCH_SAMPLES or def.
func Samples(def int) int {
	if n, err := strconv.Atoi(os.Getenv(SamplesEnv)); err == nil && n > 0 {
		return n
	}
	return def
}

// Stats summarises one side of a figure. Latencies are in microseconds.
type Stats struct {
	Label   string  `json:"label"`
	N       int     `json:"n"`
	P50us   float64 `json:"p50_us"`
	P95us   float64 `json:"p95_us"`
	P99us   float64 `json:"p99_us"`
	MaxUs   float64 `json:"max_us"`
	ReqPerS float64 `json:"req_per_s,omitempty"`
}

// Figure is one row of the table.
type Figure struct {
	ID       string             `json:"id"` // P1, P2, …
	Name     string             `json:"name"`
	Goal     string             `json:"goal"`
	Baseline Stats              `json:"baseline"`
	Subject  Stats              `json:"subject"`
	RatioP50 float64            `json:"ratio_p50"`           // subject p50 / baseline p50
	RatioRPS float64            `json:"ratio_rps,omitempty"` // subject req/s / baseline req/s
	Extra    map[string]float64 `json:"extra,omitempty"`     // figure-specific numbers
	Note     string             `json:"note,omitempty"`
}

// Summarize computes the quantiles of ds; wall, when positive, gives req/s
// as len(ds)/wall (pass the wall time of a concurrent run for throughput).
func Summarize(label string, ds []time.Duration, wall time.Duration) Stats {
	s := Stats{Label: label, N: len(ds)}
	if len(ds) == 0 {
		return s
	}
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	at := func(q float64) float64 {
		i := int(q*float64(len(sorted)-1) + 0.5)
		return float64(sorted[i].Nanoseconds()) / 1e3
	}
	s.P50us, s.P95us, s.P99us, s.MaxUs = at(0.50), at(0.95), at(0.99), at(1)
	if wall > 0 {
		s.ReqPerS = float64(len(ds)) / wall.Seconds()
	} else {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		if sum > 0 {
			s.ReqPerS = float64(len(ds)) / sum.Seconds()
		}
	}
	return s
}

var outMu sync.Mutex

// Report fills in the ratios, logs the figure and writes it out.
func Report(tb testing.TB, f Figure) {
	tb.Helper()
	if f.Baseline.P50us > 0 {
		f.RatioP50 = f.Subject.P50us / f.Baseline.P50us
	}
	if f.Baseline.ReqPerS > 0 && f.Subject.ReqPerS > 0 {
		f.RatioRPS = f.Subject.ReqPerS / f.Baseline.ReqPerS
	}
	line, err := json.Marshal(f)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Log(Format(f))
	fmt.Fprintf(os.Stderr, "FIGURE %s\n", line)
	path := os.Getenv(OutEnv)
	if path == "" {
		return
	}
	outMu.Lock()
	defer outMu.Unlock()
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		tb.Fatalf("bench output: %v", err)
	}
	defer fh.Close()
	if _, err := fh.Write(append(line, '\n')); err != nil {
		tb.Fatalf("bench output: %v", err)
	}
}

// Format renders f as one human-readable line.
func Format(f Figure) string {
	side := func(s Stats) string {
		return fmt.Sprintf("%s p50 %.0fµs p95 %.0fµs p99 %.0fµs %.0f req/s (n=%d)", s.Label, s.P50us, s.P95us, s.P99us, s.ReqPerS, s.N)
	}
	out := f.ID + " " + f.Name + ":"
	if f.Subject.N > 0 {
		out += fmt.Sprintf(" %.2fx p50", f.RatioP50)
		if f.RatioRPS > 0 {
			out += fmt.Sprintf(", %.2fx req/s", f.RatioRPS)
		}
		out += " | " + side(f.Subject) + " | baseline " + side(f.Baseline)
	}
	keys := make([]string, 0, len(f.Extra))
	for k := range f.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// %.4g: a ratio such as p3_ratio_delta (0.14 vs a 0.15 goal)
		// needs its second decimal; microseconds keep theirs too.
		out += fmt.Sprintf(" | %s=%.4g", k, f.Extra[k])
	}
	return out
}

// Parallel runs fn n times spread over workers goroutines and returns each
// call's duration and the wall time of the whole run.
func Parallel(n, workers int, fn func()) ([]time.Duration, time.Duration) {
	ds := make([]time.Duration, n)
	var wg sync.WaitGroup
	var next sync.Mutex
	i := 0
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= n {
					return
				}
				t0 := time.Now()
				fn()
				ds[k] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	return ds, time.Since(start)
}

// Alternate runs a and b n times each, interleaved so machine noise hits
// both, and returns their durations.
func Alternate(n int, a, b func()) (da, db []time.Duration) {
	da, db = make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		a()
		t1 := time.Now()
		b()
		da, db = append(da, t1.Sub(t0)), append(db, time.Since(t1))
	}
	return da, db
}

// AlternateRounds runs base and subj n times each with workers concurrent
// callers, after a warm-up of n/10 each, in rounds alternating which goes
// first, so a burst of load from elsewhere on a shared machine lands on
// both sides. It returns each side's durations and summed wall time.
func AlternateRounds(n, rounds, workers int, base, subj func()) (bd []time.Duration, bw time.Duration, sd []time.Duration, sw time.Duration) {
	Parallel(n/10, workers, base)
	Parallel(n/10, workers, subj)
	for i := 0; i < rounds; i++ {
		first, second := base, subj
		if i%2 == 1 {
			first, second = subj, base
		}
		d1, w1 := Parallel(n/rounds, workers, first)
		d2, w2 := Parallel(n/rounds, workers, second)
		if i%2 == 1 {
			d1, w1, d2, w2 = d2, w2, d1, w1
		}
		bd, bw = append(bd, d1...), bw+w1
		sd, sw = append(sd, d2...), sw+w2
	}
	return bd, bw, sd, sw
}
