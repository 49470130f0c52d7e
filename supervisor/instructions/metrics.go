package instructions

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// execMetrics count what the executor ran. Labels are block statuses and
// batch outcomes: fixed sets.
type execMetrics struct {
	batches   *prometheus.CounterVec
	blocks    *prometheus.CounterVec
	blockTime prometheus.Histogram
}

func newExecMetrics() *execMetrics {
	m := &execMetrics{
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_instruction_batches_total",
			Help: "Instruction batches (one reply's blocks) by outcome: ok (every block succeeded), partial, failed (none succeeded), empty (no block)."}, []string{"outcome"}),
		blocks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_instruction_blocks_total",
			Help: "Instruction blocks by status: succeeded, failed, system_paused, refused."}, []string{"status"}),
		blockTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "svcd_instruction_block_duration_seconds",
			Help: "Duration of one executed instruction block.", Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 30, 120}}),
	}
	for _, o := range []string{"ok", "partial", "failed", "empty"} {
		m.batches.WithLabelValues(o)
	}
	for _, s := range []string{StatusSucceeded, StatusFailed, StatusSystemPaused, StatusRefused} {
		m.blocks.WithLabelValues(s)
	}
	return m
}

func (m *execMetrics) batch(results []Outcome) {
	ok := 0
	for _, o := range results {
		status := o.Status
		switch status {
		case StatusSucceeded, StatusFailed, StatusSystemPaused, StatusRefused:
		default:
			status = StatusFailed
		}
		m.blocks.WithLabelValues(status).Inc()
		if o.OK {
			ok++
		}
		if o.DurationMs > 0 {
			m.blockTime.Observe((time.Duration(o.DurationMs) * time.Millisecond).Seconds())
		}
	}
	outcome := "partial"
	switch {
	case len(results) == 0:
		outcome = "empty"
	case ok == len(results):
		outcome = "ok"
	case ok == 0:
		outcome = "failed"
	}
	m.batches.WithLabelValues(outcome).Inc()
}

// Collectors are the executor's series for the supervisor's registry.
func (e *Executor) Collectors() []prometheus.Collector {
	return []prometheus.Collector{e.m.batches, e.m.blocks, e.m.blockTime}
}
