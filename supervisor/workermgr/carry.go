package workermgr

import (
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// carry keeps a worker's own series monotonic across its instances. Each
// instance's counters start at 0; the supervisor keeps, per worker, the
// final values of the instances that are gone (retired) plus the last
// values read from each live one, and exposes their sum under the worker's
// name alone (no pid or instance label), so a restart never makes a
// counter go back. What a crashed instance counted after the last scrape
// before it died is lost (a rolling restart reads the old instance once
// more before stopping it, so nothing is lost there). Gauges are not
// carried: only live instances' gauges are exposed.
type carry struct {
	mu      sync.Mutex
	retired map[string]*sample         // key -> sum of retired instances' final values
	live    map[int]map[string]*sample // pid -> key -> last values read
	gone    map[int]bool               // retired pids: a late read of one is dropped, never counted twice
}

// sample is one series of a worker: its family, label values and value(s).
type sample struct {
	name, help string
	typ        dto.MetricType
	labelNames []string
	labelVals  []string
	value      float64            // counter, gauge, untyped
	count      uint64             // histogram
	sum        float64            // histogram
	buckets    map[float64]uint64 // histogram: upper bound -> cumulative count
}

func newCarry() *carry {
	return &carry{retired: map[string]*sample{}, live: map[int]map[string]*sample{}, gone: map[int]bool{}}
}

// update records what instance pid just reported.
func (c *carry) update(pid int, mfs []*dto.MetricFamily) {
	got := map[string]*sample{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			s := &sample{name: mf.GetName(), help: mf.GetHelp(), typ: mf.GetType()}
			pairs := append([]*dto.LabelPair(nil), m.GetLabel()...)
			sort.Slice(pairs, func(i, j int) bool { return pairs[i].GetName() < pairs[j].GetName() })
			for _, lp := range pairs {
				s.labelNames = append(s.labelNames, lp.GetName())
				s.labelVals = append(s.labelVals, lp.GetValue())
			}
			switch s.typ {
			case dto.MetricType_COUNTER:
				s.value = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.value = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				s.count, s.sum, s.buckets = h.GetSampleCount(), h.GetSampleSum(), map[float64]uint64{}
				for _, b := range h.GetBucket() {
					s.buckets[b.GetUpperBound()] = b.GetCumulativeCount()
				}
			default:
				continue // summaries and untyped: workers do not make them
			}
			got[s.key()] = s
		}
	}
	c.mu.Lock()
	if !c.gone[pid] {
		c.live[pid] = got
	}
	c.mu.Unlock()
}

func (s *sample) key() string {
	return s.name + "\xff" + strings.Join(s.labelNames, "\xfe") + "\xff" + strings.Join(s.labelVals, "\xfe")
}

// retire folds instance pid's last values into the retired sums.
func (c *carry) retire(pid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, s := range c.live[pid] {
		if s.typ == dto.MetricType_GAUGE {
			continue
		}
		add(c.retired, k, s)
	}
	delete(c.live, pid)
	c.gone[pid] = true
}

func add(into map[string]*sample, k string, s *sample) {
	t := into[k]
	if t == nil {
		cp := *s
		cp.buckets = map[float64]uint64{}
		for ub, n := range s.buckets {
			cp.buckets[ub] = n
		}
		into[k] = &cp
		return
	}
	t.value += s.value
	t.count += s.count
	t.sum += s.sum
	for ub, n := range s.buckets {
		t.buckets[ub] += n
	}
}

// collect emits retired + live sums with a worker label added.
func (c *carry) collect(worker string, ch chan<- prometheus.Metric) {
	c.mu.Lock()
	total := map[string]*sample{}
	for k, s := range c.retired {
		add(total, k, s)
	}
	for _, inst := range c.live {
		for k, s := range inst {
			add(total, k, s)
		}
	}
	c.mu.Unlock()
	for _, s := range total {
		desc := prometheus.NewDesc(s.name, s.help, append([]string{"worker"}, s.labelNames...), nil)
		vals := append([]string{worker}, s.labelVals...)
		var m prometheus.Metric
		var err error
		switch s.typ {
		case dto.MetricType_COUNTER:
			m, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, s.value, vals...)
		case dto.MetricType_GAUGE:
			m, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, s.value, vals...)
		case dto.MetricType_HISTOGRAM:
			m, err = prometheus.NewConstHistogram(desc, s.count, s.sum, s.buckets, vals...)
		}
		if err == nil && m != nil {
			ch <- m
		}
	}
}
