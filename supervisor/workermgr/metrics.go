package workermgr

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcd/svcd/workers/pluginkit"
)

// Restart reasons (svcd_worker_restarts_total's reason label).
const (
	ReasonCrash       = "crash"        // exited on its own with a non-zero code or a signal
	ReasonHealthyExit = "healthy-exit" // exited on its own with code 0 (nobody asked it to)
	ReasonUnhealthy   = "unhealthy"    // killed after failing its health pings
	ReasonRolling     = "rolling"      // a rolling restart (operator, config change)
	ReasonBackoff     = "backoff"      // a retry after a start that failed
	ReasonFailedRetry = "failed-retry" // a failed (crash-looping) worker trying again on its own
)

func exitReason(inst *instance, info ExitInfo) string {
	switch {
	case inst.unhealthy.Load():
		return ReasonUnhealthy
	case info.Code == 0 && info.Signal == "":
		return ReasonHealthyExit
	default:
		return ReasonCrash
	}
}

// gatherTimeout bounds one worker's answer to a scrape: a stuck worker
// makes its own series stale, never the whole /metrics.
const gatherTimeout = 2 * time.Second

// gatherInto reads inst's own series into its slot's carry.
func (m *Manager) gatherInto(s *slot, inst *instance) {
	if inst.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), gatherTimeout)
	defer cancel()
	mfs, err := pluginkit.GatherFrom(ctx, inst.conn)
	if err != nil {
		s.mu.Lock()
		s.scrapeErrors++
		s.mu.Unlock()
		return
	}
	s.tel.update(inst.pid, mfs)
}

// Collector exposes the manager's view of every worker and the workers'
// own series (gathered over go-plugin on each scrape) with a worker label.
// It is unchecked (Describe sends nothing): the workers' families are only
// known once read.
func (m *Manager) Collector() prometheus.Collector { return managerCollector{m} }

type managerCollector struct{ m *Manager }

var (
	upDesc       = prometheus.NewDesc("svcd_worker_up", "1 while the worker has an instance serving.", []string{"worker"}, nil)
	restartsDesc = prometheus.NewDesc("svcd_worker_restarts_total", "Worker restarts by reason: crash, healthy-exit, unhealthy, rolling, backoff.", []string{"worker", "reason"}, nil)
	exitCodeDesc = prometheus.NewDesc("svcd_worker_last_exit_code", "Exit code of the worker's last instance that ended (-1: killed by a signal).", []string{"worker"}, nil)
	rssDesc      = prometheus.NewDesc("svcd_worker_resident_memory_bytes", "Resident memory of the worker's serving instance (/proc/PID/statm).", []string{"worker"}, nil)
	inFlightDesc = prometheus.NewDesc("svcd_worker_in_flight", "Calls in flight on the worker (serving and draining instances).", []string{"worker"}, nil)
	recoverDesc  = prometheus.NewDesc("svcd_worker_recovery_seconds", "Time from a worker stopping serving (exit, failed start) to an instance serving again.", []string{"worker"}, nil)
	scrapeDesc   = prometheus.NewDesc("svcd_worker_scrape_errors_total", "Failed reads of the worker's own metrics over go-plugin.", []string{"worker"}, nil)
)

// recoveryBuckets suit restarts: backoff starts at 50 ms, caps at 30 s.
var recoveryBuckets = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

func (managerCollector) Describe(chan<- *prometheus.Desc) {}

func (c managerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, name := range c.m.names {
		s := c.m.slots[name]
		s.mu.Lock()
		cur := s.cur
		var live []*instance
		if cur != nil {
			live = append(live, cur)
		}
		for d := range s.draining {
			live = append(live, d)
		}
		rec := s.recovery.snapshot()
		restarts := map[string]uint64{}
		for _, r := range []string{ReasonCrash, ReasonHealthyExit, ReasonUnhealthy, ReasonRolling, ReasonBackoff, ReasonFailedRetry} {
			restarts[r] = s.restartsBy[r]
		}
		lastExit := s.lastExit
		scrapeErrors := s.scrapeErrors
		s.mu.Unlock()

		up := 0.0
		if cur != nil {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, up, name)
		for r, n := range restarts {
			ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(n), name, r)
		}
		if lastExit != nil {
			ch <- prometheus.MustNewConstMetric(exitCodeDesc, prometheus.GaugeValue, float64(lastExit.Code), name)
		}
		inFlight := 0
		for _, inst := range live {
			inFlight += inst.inFlight()
		}
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(inFlight), name)
		if cur != nil {
			if rss, ok := residentBytes(cur.pid); ok {
				ch <- prometheus.MustNewConstMetric(rssDesc, prometheus.GaugeValue, rss, name)
			}
		}
		ch <- prometheus.MustNewConstHistogram(recoverDesc, rec.count, rec.sum, rec.buckets, name)
		for _, inst := range live {
			c.m.gatherInto(s, inst)
		}
		ch <- prometheus.MustNewConstMetric(scrapeDesc, prometheus.CounterValue, float64(scrapeErrors), name)
		s.tel.collect(name, ch)
	}
}

// residentBytes reads a process's resident set from /proc/PID/statm
// (second field, in pages).
func residentBytes(pid int) (float64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return float64(pages) * float64(os.Getpagesize()), true
}

// hist is a tiny cumulative histogram kept under the slot's lock.
type hist struct {
	count   uint64
	sum     float64
	buckets map[float64]uint64
}

func (h *hist) observe(v float64) {
	if h.buckets == nil {
		h.buckets = map[float64]uint64{}
		for _, ub := range recoveryBuckets {
			h.buckets[ub] = 0
		}
	}
	h.count++
	h.sum += v
	for _, ub := range recoveryBuckets {
		if v <= ub {
			h.buckets[ub]++
		}
	}
}

func (h *hist) snapshot() hist {
	out := hist{count: h.count, sum: h.sum, buckets: map[float64]uint64{}}
	for _, ub := range recoveryBuckets {
		out.buckets[ub] = h.buckets[ub]
	}
	return out
}
