package telemetry

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// Relay outcomes (svcd_relay_requests_total's outcome label).
const (
	RelayOK            = "ok"
	RelayUpstreamError = "upstream_error" // the platform answered 4xx/5xx, or the page could not reach it
	RelayCancelled     = "cancelled"      // the caller went away or cancelled it
	RelayTimedOut      = "timed_out"
	RelayRefused       = "refused"      // refused by admission (rate limit, backoff, busy)
	RelayBreakerOpen   = "breaker_open" // refused because the target's breaker is open
	RelayUnavailable   = "unavailable"  // no client to send it to, or no relay worker
	RelayInvalid       = "invalid"      // refused before anything was sent (validation)
)

// Relay is the supervisor's series of relayed requests.
type Relay struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	events   *prometheus.CounterVec
	cache    sync.Map // platform|class|outcome -> Counter
}

// NewRelay registers the relay series on reg.
func NewRelay(reg prometheus.Registerer) *Relay {
	r := &Relay{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_relay_requests_total",
			Help: "Relayed requests by platform, method class (read, write) and outcome."}, []string{"platform", "method_class", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "svcd_relay_request_duration_seconds",
			Help:    "Relayed request latency, from sending to the plugin to the last frame, by platform.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120}}, []string{"platform"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_relay_sse_events_total",
			Help: "Server-sent events written to relay callers in sse mode, by platform."}, []string{"platform"}),
	}
	reg.MustRegister(r.requests, r.latency, r.events)
	// Every label combination exists from the start (3 platforms x 2
	// classes x 8 outcomes), so rates and ratios work before the first
	// failure.
	for _, p := range []string{bridgeproto.PlatformA, bridgeproto.PlatformB, bridgeproto.PlatformC} {
		for _, c := range []string{"read", "write"} {
			for _, o := range []string{RelayOK, RelayUpstreamError, RelayCancelled, RelayTimedOut, RelayRefused, RelayBreakerOpen, RelayUnavailable, RelayInvalid} {
				r.requests.WithLabelValues(p, c, o)
			}
		}
		r.events.WithLabelValues(p)
	}
	return r
}

func boundedPlatform(p string) string {
	if bridgeproto.ValidPlatform(p) {
		return p
	}
	return "other"
}

// MethodClass is read for GET, HEAD, OPTIONS and write otherwise.
func MethodClass(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, "":
		return "read"
	}
	return "write"
}

// Done counts one relayed request; took is zero when nothing was sent.
func (r *Relay) Done(platform, method, outcome string, took time.Duration) {
	if r == nil {
		return
	}
	platform = boundedPlatform(platform)
	key := platform + "|" + MethodClass(method) + "|" + outcome
	c, ok := r.cache.Load(key)
	if !ok {
		c, _ = r.cache.LoadOrStore(key, r.requests.WithLabelValues(platform, MethodClass(method), outcome))
	}
	c.(prometheus.Counter).Inc()
	if took > 0 {
		r.latency.WithLabelValues(platform).Observe(took.Seconds())
	}
}

// Events counts the SSE events written to one caller.
func (r *Relay) Events(platform string, n int64) {
	if r != nil && n > 0 {
		r.events.WithLabelValues(boundedPlatform(platform)).Add(float64(n))
	}
}

// RelayOutcome classifies a relayed request's end: the handler's error (nil
// when it answered) and the platform's status.
func RelayOutcome(err error, status int) string {
	if err == nil {
		if status >= 400 {
			return RelayUpstreamError
		}
		return RelayOK
	}
	ae := api.AsError(err)
	switch ae.Code {
	case "relay_timeout":
		return RelayTimedOut
	case "request_cancelled", "caller_gone":
		return RelayCancelled
	case "relay_refused":
		return RelayRefused
	case "relay_unavailable", "no_client", "client_not_found", "no_eligible_client":
		return RelayUnavailable
	}
	switch {
	case ae.Status == http.StatusBadGateway:
		return RelayUpstreamError
	case ae.Status == http.StatusGatewayTimeout:
		return RelayTimedOut
	case ae.Status == http.StatusUnprocessableEntity || ae.Status == http.StatusBadRequest || ae.Status == http.StatusConflict:
		return RelayInvalid
	case ae.Status == http.StatusServiceUnavailable || ae.Status == http.StatusNotFound:
		return RelayUnavailable
	}
	return RelayUpstreamError
}
