package relayadmit

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// tokenCounts are the lease tokens this admitter was granted and used
// (granted minus used is what went back to the engine or sits in pools).
type tokenCounts struct{ granted, used atomic.Uint64 }

// Collectors are the admitter's series for the supervisor's registry.
func (a *Admitter) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "svcd_relay_lease_tokens_granted_total",
			Help: "Relay admission tokens the relay worker granted to the supervisor in leases."},
			func() float64 { return float64(a.tokens.granted.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "svcd_relay_lease_tokens_used_total",
			Help: "Relay requests admitted from a leased token (no worker call on the request's path)."},
			func() float64 { return float64(a.tokens.used.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svcd_relay_outcomes_queued",
			Help: "Relay outcomes queued for the relay worker, not yet delivered."},
			func() float64 {
				a.mu.Lock()
				defer a.mu.Unlock()
				return float64(len(a.pending) + a.sending)
			}),
	}
}
