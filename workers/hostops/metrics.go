package hostops

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// metered is HostOps with the worker's engine counters around it. The
// outcome label is the result's error code (a fixed set, hostops.go) or
// "ok": never a path, command or pid.
type metered struct {
	HostOps
	execs     *prometheus.CounterVec
	execTime  prometheus.Histogram
	truncated *prometheus.CounterVec
	files     *prometheus.CounterVec
	oomKills  prometheus.Counter
	pidsHits  prometheus.Counter
}

// Metered wraps impl and registers its series on reg.
func Metered(impl HostOps, reg prometheus.Registerer) HostOps {
	execTime := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "svcd_hostops_exec_duration_seconds",
		Help:    "Wall time of exec commands in the hostops worker, start to exit.",
		Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 30, 120},
	})
	m := &metered{HostOps: impl, execTime: execTime,
		execs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_hostops_exec_total",
			Help: "Exec calls by outcome: ok or the result's error code (non_zero_exit, timed_out, signaled, spawn_failed, ...)."}, []string{"outcome"}),
		truncated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_hostops_exec_output_truncated_total",
			Help: "Exec results whose output hit the cap, by stream."}, []string{"stream"}),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_hostops_file_ops_total",
			Help: "File reads and writes by op and outcome (ok or the result's error code)."}, []string{"op", "outcome"}),
		oomKills: prometheus.NewCounter(prometheus.CounterOpts{Name: "svcd_exec_oom_kills_total",
			Help: "Exec commands killed by the sandbox's memory limit (OOM)."}),
		pidsHits: prometheus.NewCounter(prometheus.CounterOpts{Name: "svcd_exec_pids_limit_hits_total",
			Help: "Exec commands that hit the sandbox's pids limit."}),
	}
	reg.MustRegister(m.execs, m.execTime, m.truncated, m.files, m.oomKills, m.pidsHits)
	for _, o := range []string{"ok", CodeNonZeroExit, CodeTimedOut, CodeSignaled, CodeSpawnFailed, CodeOOMKilled, "error"} {
		m.execs.WithLabelValues(o)
	}
	for _, s := range []string{"stdout", "stderr"} {
		m.truncated.WithLabelValues(s)
	}
	for _, op := range []string{"read", "write"} {
		m.files.WithLabelValues(op, "ok")
	}
	return m
}

func outcome(ok bool, code string) string {
	if ok || code == "" {
		return "ok"
	}
	return code
}

func (m *metered) Exec(ctx context.Context, req ExecRequest, started func(Started)) (ExecResult, error) {
	res, err := m.HostOps.Exec(ctx, req, started)
	if err != nil {
		m.execs.WithLabelValues("error").Inc()
		return res, err
	}
	m.execs.WithLabelValues(outcome(res.OK, res.ErrorCode)).Inc()
	if !res.FinishedAt.IsZero() && !res.StartedAt.IsZero() {
		m.execTime.Observe(res.FinishedAt.Sub(res.StartedAt).Seconds())
	}
	if res.StdoutTruncated {
		m.truncated.WithLabelValues("stdout").Inc()
	}
	if res.StderrTruncated {
		m.truncated.WithLabelValues("stderr").Inc()
	}
	m.sandbox(res)
	return res, nil
}

// sandbox counts the exec sandbox's limit hits, from what the command's
// cgroup said (oom_kill events, pids.events max).
func (m *metered) sandbox(res ExecResult) {
	if res.OOMKilled {
		m.oomKills.Inc()
	}
	if res.PidsLimitHit {
		m.pidsHits.Inc()
	}
}

func (m *metered) ReadFile(ctx context.Context, req ReadRequest) (ReadResult, error) {
	res, err := m.HostOps.ReadFile(ctx, req)
	if err != nil {
		m.files.WithLabelValues("read", "error").Inc()
	} else {
		m.files.WithLabelValues("read", outcome(res.OK, res.ErrorCode)).Inc()
	}
	return res, err
}

func (m *metered) WriteFile(ctx context.Context, req WriteRequest) (WriteResult, error) {
	res, err := m.HostOps.WriteFile(ctx, req)
	if err != nil {
		m.files.WithLabelValues("write", "error").Inc()
	} else {
		m.files.WithLabelValues("write", outcome(res.OK, res.ErrorCode)).Inc()
	}
	return res, err
}
