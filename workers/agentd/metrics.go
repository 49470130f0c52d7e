package agentd

import (
	"github.com/prometheus/client_golang/prometheus"
)

// daemonMetrics are agentd's own series. In the agentd worker they sit on
// the worker's registry and reach the supervisor's /metrics over go-plugin
// (with worker="agentd"); the standalone daemon keeps them unexposed.
type daemonMetrics struct {
	turns    *prometheus.CounterVec
	turnTime prometheus.Histogram
}

func newDaemonMetrics() *daemonMetrics {
	m := &daemonMetrics{
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_agent_turns_total",
			Help: "Agent turns finished, by status (completed, interrupted, failed, other)."}, []string{"status"}),
		turnTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "svcd_agent_turn_duration_seconds",
			Help: "Agent turn latency, from start to the final notification.", Buckets: []float64{.1, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}}),
	}
	for _, s := range []string{"completed", "interrupted", "failed", "other"} {
		m.turns.WithLabelValues(s)
	}
	return m
}

func turnStatusLabel(s string) string {
	switch s {
	case "completed", "interrupted", "failed":
		return s
	}
	return "other"
}

// Collectors are the daemon's series: the counters above and gauges read
// on each scrape.
func (d *Daemon) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		d.m.turns, d.m.turnTime,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svcd_agent_sessions", Help: "Agent sessions agentd holds."},
			func() float64 {
				d.mu.Lock()
				defer d.mu.Unlock()
				return float64(len(d.sessions))
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svcd_agent_turns_running", Help: "Agent sessions with a turn running."},
			func() float64 {
				d.mu.Lock()
				defer d.mu.Unlock()
				n := 0
				for _, s := range d.sessions {
					if s.Status == "running" {
						n++
					}
				}
				return float64(n)
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "svcd_agent_child_restarts_total", Help: "Restarts of agentd's Codex child."},
			func() float64 {
				d.mu.Lock()
				defer d.mu.Unlock()
				return float64(d.childSt.Restarts)
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svcd_agent_child_up", Help: "1 while agentd's Codex child is running."},
			func() float64 {
				d.mu.Lock()
				defer d.mu.Unlock()
				if d.childSt.State == "running" {
					return 1
				}
				return 0
			}),
	}
}
