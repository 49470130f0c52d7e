package tasks

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcd/svcd/raftstore"
)

var tasksDesc = prometheus.NewDesc("svcd_tasks", "Task records in the state by status (queued, running, succeeded, failed, canceled, skipped). The state keeps a bounded history, so finished counts plateau.", []string{"status"}, nil)

// Collector reads the task records by status on each scrape.
func (s *Store) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *Store }

func (c collector) Describe(ch chan<- *prometheus.Desc) { ch <- tasksDesc }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	by := map[string]int{raftstore.TaskQueued: 0, raftstore.TaskRunning: 0, raftstore.TaskSucceeded: 0,
		raftstore.TaskFailed: 0, raftstore.TaskCanceled: 0, raftstore.TaskSkipped: 0}
	c.s.w.Read(func(st *raftstore.State) {
		for _, t := range st.Tasks.ByID {
			if _, ok := by[t.Status]; ok {
				by[t.Status]++
			}
		}
	})
	for st, n := range by {
		ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(n), st)
	}
}
