package renewal

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcd/svcd/raftstore"
)

// driverMetrics are the driver's counters (deliveries, ticks); the state's
// gauges are read from the FSM on each scrape (Collectors).
type driverMetrics struct {
	deliveries *prometheus.CounterVec
	ticks      *prometheus.CounterVec
	tickTime   prometheus.Histogram
}

func newDriverMetrics() *driverMetrics {
	m := &driverMetrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_renewal_deliveries_total",
			Help: "Renewal deliveries by outcome: ok, duplicate (typed before; nothing typed now), failed (the plugin could not deliver), error (no plugin, timeout)."}, []string{"outcome"}),
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_renewal_ticks_total",
			Help: "Scheduler ticks run by this node, by outcome (ok, error, skipped_system_paused)."}, []string{"outcome"}),
		tickTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "svcd_renewal_tick_duration_seconds",
			Help: "Duration of one scheduler tick (the worker's projection and dispatch, deliveries included).", Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 30, 120}}),
	}
	for _, o := range []string{"ok", "duplicate", "failed", "error"} {
		m.deliveries.WithLabelValues(o)
	}
	for _, o := range []string{"ok", "error", "skipped_system_paused"} {
		m.ticks.WithLabelValues(o)
	}
	return m
}

func (m *driverMetrics) tick(took time.Duration, skipped bool, err error) {
	outcome := "ok"
	switch {
	case err != nil:
		outcome = "error"
	case skipped:
		outcome = "skipped_system_paused"
	}
	m.ticks.WithLabelValues(outcome).Inc()
	m.tickTime.Observe(took.Seconds())
}

func (m *driverMetrics) delivered(ok, duplicate bool, failedByPlugin bool) {
	outcome := "error"
	switch {
	case ok && duplicate:
		outcome = "duplicate"
	case ok:
		outcome = "ok"
	case failedByPlugin:
		outcome = "failed"
	}
	m.deliveries.WithLabelValues(outcome).Inc()
}

var (
	jobsDesc    = prometheus.NewDesc("svcd_renewal_jobs", "Renewal jobs in the state by status (pending, running, done, failed, canceled).", []string{"status"}, nil)
	waitingDesc = prometheus.NewDesc("svcd_renewal_jobs_waiting_plugin", "Pending renewal jobs whose conversation's browser plugin is not connected.", nil, nil)
	convsDesc   = prometheus.NewDesc("svcd_conversations", "Conversations by automation status (manual, auto, paused).", []string{"automation_status"}, nil)
)

// Collectors are the renewal series for the supervisor's registry.
func (d *Driver) Collectors() []prometheus.Collector {
	return []prometheus.Collector{d.m.deliveries, d.m.ticks, d.m.tickTime, stateCollector{d}}
}

type stateCollector struct{ d *Driver }

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- waitingDesc
	ch <- convsDesc
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	jobs := map[string]int{raftstore.JobPending: 0, raftstore.JobRunning: 0, raftstore.JobDone: 0, raftstore.JobFailed: 0, raftstore.JobCanceled: 0}
	convs := map[string]int{raftstore.AutoManual: 0, raftstore.AutoAuto: 0, raftstore.AutoPaused: 0}
	var pendingClients []string
	c.d.store.w.Read(func(st *raftstore.State) {
		for _, j := range st.Jobs.ByID {
			if _, ok := jobs[j.Status]; ok {
				jobs[j.Status]++
			}
			if j.Status == raftstore.JobPending {
				if cv := st.Conversations.ByID[j.LocalID]; cv != nil {
					pendingClients = append(pendingClients, cv.ClientID)
				}
			}
		}
		for _, cv := range st.Conversations.ByID {
			if _, ok := convs[cv.AutomationStatus]; ok {
				convs[cv.AutomationStatus]++
			}
		}
	})
	waiting := 0
	for _, id := range pendingClients {
		if c.d.reachable == nil || !c.d.reachable(id) {
			waiting++
		}
	}
	for st, n := range jobs {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(n), st)
	}
	ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(waiting))
	for st, n := range convs {
		ch <- prometheus.MustNewConstMetric(convsDesc, prometheus.GaugeValue, float64(n), st)
	}
}
