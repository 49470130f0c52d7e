package supervisor

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/svcd/svcd/raftstore"
)

// metrics holds the supervisor's Prometheus collectors on a registry of its
// own (no process-global registry, so several servers can live in one test).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svcd_http_requests_total",
			Help: "HTTP requests by route template, method and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "svcd_http_request_duration_seconds",
			Help:    "HTTP request latency by route template.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
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
	)
	return m
}

// instrument counts and times requests under a fixed route label (the
// template, never the raw path, so label cardinality stays bounded). The
// route's children are resolved here, once, not looked up by label on each
// request.
func (m *metrics) instrument(route string, next http.Handler) http.Handler {
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
}

func (rm *routeMetrics) observe(status int, took time.Duration) {
	c, ok := rm.byCode.Load(status)
	if !ok {
		c, _ = rm.byCode.LoadOrStore(status, rm.requests.WithLabelValues(rm.route, strconv.Itoa(status)))
	}
	c.(prometheus.Counter).Inc()
	rm.latency.Observe(took.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
