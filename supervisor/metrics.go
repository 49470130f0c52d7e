package supervisor

import (
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/supervisor/telemetry"
)

// metrics holds the supervisor's Prometheus collectors on a registry of its
// own (no process-global registry, so several servers can live in one test).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	off      bool // SVCD_METRICS_OFF: requests are not counted (benchmarks only)
}

// metricsOffEnv turns request instrumentation off in the supervisor and the
// workers (which inherit it). It exists for one purpose: measuring what
// metrics cost in the same run (scripts/bench). Not a documented setting.
const metricsOffEnv = "SVCD_METRICS_OFF"

func newMetrics(s *Server) *metrics {
	if s.metricsReg == nil {
		s.metricsReg = prometheus.NewRegistry()
	}
	m := &metrics{
		reg: s.metricsReg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svcd_http_requests_total",
			Help: "HTTP requests by route template, method and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "svcd_http_request_duration_seconds",
			Help:    "HTTP request latency by route template.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		off: os.Getenv(metricsOffEnv) == "1",
	}
	isLeader := func() float64 {
		if s.node.IsLeader() {
			return 1
		}
		return 0
	}
	roleInfo := func(pick func(raftstore.RoleInfo) uint64) func() float64 {
		return func() float64 {
			return float64(pick(s.node.Role()))
		}
	}
	lateFrames := func() float64 {
		if s.browser == nil || s.browser.hub == nil {
			return 0
		}
		return float64(s.browser.hub.LateFrames())
	}
	m.reg.MustRegister(
		m.requests, m.latency,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "svcd_browser_late_frames_total",
			Help: "Plugin frames dropped quietly because their request or action had just finished (answered, cancelled, timed out)."}, lateFrames),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svcd_raft_leader", Help: "1 when this node is the raft leader."}, isLeader),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svcd_raft_term", Help: "Current raft term."}, roleInfo(func(r raftstore.RoleInfo) uint64 { return r.Term })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svcd_raft_last_index", Help: "Last raft log index."}, roleInfo(func(r raftstore.RoleInfo) uint64 { return r.LastIndex })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svcd_raft_applied_index", Help: "Last raft index applied to the FSM."}, roleInfo(func(r raftstore.RoleInfo) uint64 { return r.AppliedIdx })),
		telemetry.RaftProgress{Read: s.node.Progress, IsLeader: s.node.IsLeader},
	)
	m.registerAreas(s)
	return m
}

// registerAreas puts every area's own series on the registry: each area
// package defines its series and hands them over as collectors; the
// supervisor only wires them (docs/metrics.md lists them all).
func (m *metrics) registerAreas(s *Server) {
	if s.workers != nil {
		m.reg.MustRegister(s.workers.Collector())
	}
	if s.browser != nil {
		m.reg.MustRegister(s.browser.hub.Collectors()...)
		if s.browser.admit != nil {
			m.reg.MustRegister(s.browser.admit.Collectors()...)
		}
		if !m.off {
			s.browser.requests.Metrics = telemetry.NewRelay(m.reg)
		}
	}
	if !m.off {
		s.hostopsMetrics = telemetry.NewHostOps(m.reg)
	}
	if s.sched != nil {
		m.reg.MustRegister(s.sched.Collectors()...)
	}
	if s.tasks != nil {
		m.reg.MustRegister(s.tasks.Collector())
	}
	if side := s.instructionsSetup(); side.exec != nil {
		m.reg.MustRegister(side.exec.Collectors()...)
	}
}

// instrument counts and times requests under a fixed route label (the
// template, never the raw path, so label cardinality stays bounded). The
// route's children are resolved here, once, not looked up by label on each
// request.
func (m *metrics) instrument(route string, next http.Handler) http.Handler {
	if m.off {
		return next
	}
	rm := &routeMetrics{requests: m.requests, route: route, latency: m.latency.WithLabelValues(route)}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := responseWriterOf(w)
		next.ServeHTTP(rw, r)
		rm.observe(rw.status, time.Since(rw.start))
	})
}

// routeMetrics are one route's series: its latency histogram and its request
// counters by status code, each made on the code's first use (as
// WithLabelValues would) and kept.
type routeMetrics struct {
	requests *prometheus.CounterVec
	route    string
	latency  prometheus.Observer
	byCode   sync.Map // int status -> prometheus.Counter
	// ok is the 200 counter once a 200 was counted: most answers take this
	// path, a pointer load instead of sync.Map's hash of a boxed int
	// (issue 22 cost: BenchmarkInstrumentWrapper).
	ok atomic.Pointer[prometheus.Counter]
}

func (rm *routeMetrics) observe(status int, took time.Duration) {
	if status == http.StatusOK {
		if c := rm.ok.Load(); c != nil {
			(*c).Inc()
			rm.latency.Observe(took.Seconds())
			return
		}
	}
	v, ok := rm.byCode.Load(status)
	if !ok {
		v, _ = rm.byCode.LoadOrStore(status, rm.requests.WithLabelValues(rm.route, strconv.Itoa(status)))
	}
	c := v.(prometheus.Counter)
	if status == http.StatusOK {
		rm.ok.Store(&c)
	}
	c.Inc()
	rm.latency.Observe(took.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
