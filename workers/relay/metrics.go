package relay

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcd/svcd/shared/bridgeproto"
)

// Collector exposes the engine's per-target state summed by platform. A
// target is "platform/client/account", so the target itself (it carries a
// client id) is never a label: the platform prefix is, and anything that is
// not one of the three platforms counts as "other". The set of label values
// is therefore fixed however many clients and accounts come and go.
type Collector struct{ e *Engine }

// NewCollector reads e on every scrape.
func NewCollector(e *Engine) *Collector { return &Collector{e: e} }

var (
	breakersDesc = prometheus.NewDesc("svcd_relay_breakers", "Relay targets by platform and breaker state (closed, open, half_open).", []string{"platform", "state"}, nil)
	admittedDesc = prometheus.NewDesc("svcd_relay_admitted_total", "Requests the relay policy admitted, by platform (kept in raft state, so it survives restarts).", []string{"platform"}, nil)
	refusedDesc  = prometheus.NewDesc("svcd_relay_refused_total", "Requests the relay policy refused, by platform (kept in raft state).", []string{"platform"}, nil)
	inFlightDesc = prometheus.NewDesc("svcd_relay_in_flight", "Admitted relay requests not yet reported, by platform.", []string{"platform"}, nil)
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- breakersDesc
	ch <- admittedDesc
	ch <- refusedDesc
	ch <- inFlightDesc
}

func platformOf(target string) string {
	p, _, _ := strings.Cut(target, "/")
	if bridgeproto.ValidPlatform(p) {
		return p
	}
	return "other"
}

type platformSums struct {
	admitted, refused, inFlight float64
	breakers                    map[string]float64
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	sums := map[string]*platformSums{}
	for _, p := range []string{bridgeproto.PlatformA, bridgeproto.PlatformB, bridgeproto.PlatformC} {
		sums[p] = &platformSums{breakers: map[string]float64{BreakerClosed: 0, BreakerOpen: 0, BreakerHalfOpen: 0}}
	}
	c.e.mu.Lock()
	for _, t := range c.e.targets {
		p := platformOf(t.Target)
		s := sums[p]
		if s == nil {
			s = &platformSums{breakers: map[string]float64{BreakerClosed: 0, BreakerOpen: 0, BreakerHalfOpen: 0}}
			sums[p] = s
		}
		s.admitted += float64(t.Admitted)
		s.refused += float64(t.Refused)
		s.inFlight += float64(t.inFlight)
		s.breakers[t.Breaker]++
	}
	c.e.mu.Unlock()
	for p, s := range sums {
		ch <- prometheus.MustNewConstMetric(admittedDesc, prometheus.CounterValue, s.admitted, p)
		ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, s.refused, p)
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, s.inFlight, p)
		for st, n := range s.breakers {
			ch <- prometheus.MustNewConstMetric(breakersDesc, prometheus.GaugeValue, n, p, st)
		}
	}
}
