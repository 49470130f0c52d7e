package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcd/svcd/shared/api"
)

// HostOps is the supervisor's view of exec and file calls: what the caller
// got, including what never reached the worker (validation, the
// exec_max_concurrent cap, a worker down). The hostops worker counts its own
// side (svcd_hostops_*, svcd_exec_oom_kills_total …, with worker="hostops").
type HostOps struct {
	calls    *prometheus.CounterVec
	truncate prometheus.Counter
}

// NewHostOps registers the series on reg.
func NewHostOps(reg prometheus.Registerer) *HostOps {
	h := &HostOps{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_hostops_requests_total",
			Help: "Exec and file API calls by op (exec, read, write) and outcome: ok, the result's error code, or the API error code (exec_busy when exec_max_concurrent is full, worker_* when the worker is down, validation codes)."},
			[]string{"op", "outcome"}),
		truncate: prometheus.NewCounter(prometheus.CounterOpts{Name: "svcd_exec_output_truncated_total",
			Help: "Exec answers whose stdout or stderr hit the output cap."}),
	}
	reg.MustRegister(h.calls, h.truncate)
	for _, op := range []string{"exec", "read", "write"} {
		h.calls.WithLabelValues(op, "ok")
	}
	h.calls.WithLabelValues("exec", "exec_busy")
	return h
}

// Done counts one call: err is the API error (nil when the call answered),
// code the result's error code ("" when ok).
func (h *HostOps) Done(op string, err error, code string, truncated bool) {
	if h == nil {
		return
	}
	outcome := "ok"
	switch {
	case err != nil:
		outcome = api.AsError(err).Code
	case code != "":
		outcome = code
	}
	h.calls.WithLabelValues(op, outcome).Inc()
	if truncated {
		h.truncate.Inc()
	}
}
