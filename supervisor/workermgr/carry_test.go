package workermgr

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/svcd/svcd/workers/pluginkit"
)

// families makes what one worker instance reports: a counter with one
// label, a gauge and a histogram, on a real registry (as Gather gives them).
func families(t *testing.T, calls float64, inFlight float64, observations ...float64) []*dto.MetricFamily {
	t.Helper()
	tel := pluginkit.NewTelemetry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"k"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x_live", Help: "x"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x_seconds", Help: "x", Buckets: []float64{1, 10}})
	tel.Registry.MustRegister(c, g, h)
	c.WithLabelValues("a").Add(calls)
	g.Set(inFlight)
	for _, o := range observations {
		h.Observe(o)
	}
	mfs, err := tel.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func collected(t *testing.T, c *carry) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectorFunc(func(ch chan<- prometheus.Metric) { c.collect("w", ch) }))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[len(m.GetLabel())-1].GetValue() != "w" && m.GetLabel()[0].GetValue() != "w" {
				t.Fatalf("%s lacks worker=w: %v", mf.GetName(), m.GetLabel())
			}
		}
	}
	return out
}

type collectorFunc func(chan<- prometheus.Metric)

func (collectorFunc) Describe(chan<- *prometheus.Desc)      {}
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }

func TestCarryKeepsCountersAcrossInstances(t *testing.T) {
	c := newCarry()
	c.update(100, families(t, 5, 3, 0.5, 5))
	c.retire(100)
	// A late read of the retired instance (a scrape racing its stop) must
	// not count it twice.
	c.update(100, families(t, 6, 3, 0.5, 5, 5))
	c.retire(100)
	c.update(200, families(t, 2, 1, 20))
	got := collected(t, c)
	if v := got["x_total"].GetMetric()[0].GetCounter().GetValue(); v != 7 {
		t.Fatalf("counter = %v, want 5 (retired) + 2 (live)", v)
	}
	if v := got["x_live"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Fatalf("gauge = %v, want the live instance's 1 only", v)
	}
	h := got["x_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 25.5 {
		t.Fatalf("histogram count %d sum %v, want 3 and 25.5", h.GetSampleCount(), h.GetSampleSum())
	}
	if b := h.GetBucket(); b[0].GetCumulativeCount() != 1 || b[1].GetCumulativeCount() != 2 {
		t.Fatalf("buckets %v, want le=1:1 le=10:2", b)
	}
	// The live instance dies: its last values stay counted; its gauge goes.
	c.retire(200)
	got = collected(t, c)
	if v := got["x_total"].GetMetric()[0].GetCounter().GetValue(); v != 7 {
		t.Fatalf("counter after the last instance ended = %v, want 7", v)
	}
	if got["x_live"] != nil {
		t.Fatal("a dead instance's gauge is still exposed")
	}
}
