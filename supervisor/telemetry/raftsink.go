// Package telemetry holds the supervisor's metrics that are not one area's
// own: raft's series (hashicorp/raft emits through go-metrics) and the
// collectors the supervisor root wires onto its registry.
package telemetry

import (
	"strings"
	"sync"
	"time"
	"unicode"

	gometrics "github.com/hashicorp/go-metrics/compat"
	gmprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// raft emits its metrics through go-metrics' process-wide global (through
// go-metrics/compat, which is armon/go-metrics unless built with the
// hashicorpmetrics tag; the compat package used here follows the same tag).
// That global is the one thing here that cannot be per server: it is set
// once per process to a fanout whose members are the live servers' sinks.
// A server adds its sink on start and removes it on close, so a closed
// server's registry stops receiving, and a test that starts servers one
// after another sees only its own. Servers alive at the same time in one
// process (a few in-process tests) each see every node's raft series: raft
// puts no node identity in them. A daemon runs one node per process.
var global = struct {
	once  sync.Once
	mu    sync.RWMutex
	sinks map[*RaftSink]struct{}
}{sinks: map[*RaftSink]struct{}{}}

// RaftSink receives raft's go-metrics and exposes them on one registry
// through go-metrics' Prometheus sink, under svcd_ names (see rename).
type RaftSink struct {
	prom  *gmprom.PrometheusSink
	reg   prometheus.Registerer
	names sync.Map // joined go-metrics key -> renamed key
}

// NewRaftSink registers a go-metrics Prometheus sink on reg and makes it a
// member of the process's fanout. Close removes it.
func NewRaftSink(reg prometheus.Registerer) (*RaftSink, error) {
	// Expiration 0: a series raft emitted once (an election, a snapshot)
	// stays, so an alert on its rate works however seldom it happens.
	prom, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{Registerer: reg, Name: "svcd_raft_sink"})
	if err != nil {
		return nil, err
	}
	s := &RaftSink{prom: prom, reg: reg}
	global.once.Do(func() {
		cfg := gometrics.DefaultConfig("")
		cfg.EnableHostname = false
		cfg.EnableHostnameLabel = false
		cfg.EnableRuntimeMetrics = false
		cfg.EnableServiceLabel = false
		cfg.TimerGranularity = time.Second // MeasureSince in seconds: Prometheus's base unit
		_, _ = gometrics.NewGlobal(cfg, fanout{})
	})
	global.mu.Lock()
	global.sinks[s] = struct{}{}
	global.mu.Unlock()
	return s, nil
}

// Close leaves the fanout and unregisters the sink.
func (s *RaftSink) Close() {
	global.mu.Lock()
	delete(global.sinks, s)
	global.mu.Unlock()
	s.reg.Unregister(s.prom)
}

// fanout is the go-metrics global's sink: every live RaftSink.
type fanout struct{}

func each(fn func(*RaftSink)) {
	global.mu.RLock()
	defer global.mu.RUnlock()
	for s := range global.sinks {
		fn(s)
	}
}

func (fanout) SetGauge(key []string, val float32) { fanout{}.SetGaugeWithLabels(key, val, nil) }
func (fanout) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
	each(func(s *RaftSink) {
		k, scale := s.rename(key, kindGauge)
		s.prom.SetGaugeWithLabels(k, val*scale, bounded(labels))
	})
}
func (fanout) SetPrecisionGauge(key []string, val float64) {
	fanout{}.SetGaugeWithLabels(key, float32(val), nil)
}
func (fanout) SetPrecisionGaugeWithLabels(key []string, val float64, labels []gometrics.Label) {
	fanout{}.SetGaugeWithLabels(key, float32(val), labels)
}
func (fanout) EmitKey([]string, float32)             {}
func (fanout) IncrCounter(key []string, val float32) { fanout{}.IncrCounterWithLabels(key, val, nil) }
func (fanout) IncrCounterWithLabels(key []string, val float32, labels []gometrics.Label) {
	each(func(s *RaftSink) {
		k, _ := s.rename(key, kindCounter)
		s.prom.IncrCounterWithLabels(k, val, bounded(labels))
	})
}
func (fanout) AddSample(key []string, val float32) { fanout{}.AddSampleWithLabels(key, val, nil) }
func (fanout) AddSampleWithLabels(key []string, val float32, labels []gometrics.Label) {
	each(func(s *RaftSink) {
		k, scale := s.rename(key, kindSample)
		s.prom.AddSampleWithLabels(k, val*scale, bounded(labels))
	})
}

// bounded drops labels that carry ids: raft labels replication series with
// the peer's node id; a cluster's few peers are summed into one series.
func bounded(labels []gometrics.Label) []gometrics.Label {
	out := labels[:0:0]
	for _, l := range labels {
		if l.Name == "peer_id" {
			continue
		}
		out = append(out, l)
	}
	return out
}

type kind int

const (
	kindGauge kind = iota
	kindCounter
	kindSample
)

// Keys raft emits whose value is not a duration measured by MeasureSince
// (which, with TimerGranularity one second, arrives in seconds), and those
// raft itself measures in milliseconds.
var (
	unitless = map[string]bool{"applyBatchNum": true, "peers": true, "commitNumLogs": true, "dispatchNumLogs": true, "logs": true,
		"logsPerBatch": true, "writeCapacity": true} // raft-boltdb: entries per batch, entries per second
	bytesKeys = map[string]bool{"logBatchSize": true, "logSize": true} // raft-boltdb
	millis    = map[string]bool{"lastContact": true, "lastRestoreDuration": true, "oldestLogAge": true}
	ratios    = map[string]bool{"saturation": true}
)

// rename maps a go-metrics key onto a Prometheus name promtool accepts:
// svcd_ prefix, snake_case, counters ending in _total, durations in
// seconds ending in _seconds. It returns the key as one part (the sink
// joins parts with "_") and the factor that converts the value.
func (s *RaftSink) rename(key []string, k kind) ([]string, float32) {
	joined := strings.Join(key, ".")
	cacheKey := string(rune('0'+k)) + joined
	if v, ok := s.names.Load(cacheKey); ok {
		r := v.(renamed)
		return r.key, r.scale
	}
	last := key[len(key)-1]
	parts := []string{"svcd"}
	for _, p := range key {
		parts = append(parts, snake(p))
	}
	scale := float32(1)
	switch {
	case k == kindCounter:
		parts = append(parts, "total")
	case ratios[last]:
		parts = append(parts, "ratio")
	case unitless[last]:
	case bytesKeys[last]:
		parts = append(parts, "bytes")
	case millis[last]:
		parts, scale = append(parts, "seconds"), 0.001
	case k == kindSample:
		parts = append(parts, "seconds")
	}
	r := renamed{key: []string{strings.Join(parts, "_")}, scale: scale}
	s.names.Store(cacheKey, r)
	return r.key, r.scale
}

type renamed struct {
	key   []string
	scale float32
}

// snake turns "commitTime" into "commit_time", "appendEntries" into
// "append_entries", "FSM" into "fsm".
func snake(p string) string {
	var b strings.Builder
	rs := []rune(p)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))) {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		if r == '-' || r == '.' {
			r = '_'
		}
		b.WriteRune(r)
	}
	return b.String()
}
