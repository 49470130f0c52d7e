package benchfig

import (
	"testing"
	"time"
)

// Leg is one named step of a breakdown benchmark.
type Leg struct {
	Name string
	Fn   func()
}

// InterleaveLegs warms every leg up (20 rounds), then takes n samples of
// each, one leg after the other in every round, so the machine's drift
// falls on every leg alike. It logs each leg's p50/p95 and its ratio to the
// first leg (the baseline), each line starting with tag, and returns the
// samples in the legs' order.
func InterleaveLegs(tb testing.TB, tag string, n int, legs []Leg) [][]time.Duration {
	tb.Helper()
	for i := 0; i < 20; i++ {
		for _, l := range legs {
			l.Fn()
		}
	}
	ds := make([][]time.Duration, len(legs))
	for i := 0; i < n; i++ {
		for k, l := range legs {
			t0 := time.Now()
			l.Fn()
			ds[k] = append(ds[k], time.Since(t0))
		}
	}
	base := Summarize("", ds[0], 0).P50us
	for k, l := range legs {
		st := Summarize(l.Name, ds[k], 0)
		tb.Logf("%s %-16s p50 %7.0f µs  p95 %7.0f µs  %.2fx %s", tag, l.Name, st.P50us, st.P95us, st.P50us/base, legs[0].Name)
	}
	return ds
}
