package bridge

import (
	"reflect"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcd/svcd/shared/bridgeproto"
)

// hubMetrics are the bridge's series. Label values come from fixed sets:
// message types the parser accepted (or "other"), pairing outcomes, close
// codes, parse error codes; never a client id or request id.
type hubMetrics struct {
	pairings *prometheus.CounterVec
	frames   *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	closes   *prometheus.CounterVec
	refused  *prometheus.CounterVec
	// children resolved once per label value (the frame path is hot)
	framesIn, framesOut sync.Map // type -> prometheus.Counter
	bytesIn, bytesOut   prometheus.Counter
}

func newHubMetrics() *hubMetrics {
	m := &hubMetrics{
		pairings: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_bridge_pairings_total",
			Help: "Browser plugin pairing attempts by outcome (paired, bad_hello, full, record_failed, left, or the hello refusal code)."}, []string{"outcome"}),
		frames: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_bridge_frames_total",
			Help: "Bridge data frames by direction (in, out) and message type."}, []string{"direction", "type"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_bridge_bytes_total",
			Help: "Bridge data frame bytes by direction."}, []string{"direction"}),
		closes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_bridge_closes_total",
			Help: "Paired bridge connections closed, by WebSocket close code."}, []string{"code"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svcd_bridge_refused_messages_total",
			Help: "Plugin messages refused by the parser, by error code."}, []string{"code"}),
	}
	m.bytesIn, m.bytesOut = m.bytes.WithLabelValues("in"), m.bytes.WithLabelValues("out")
	// Every outcome exists from the start (at 0), so a rate() over it
	// works before the first failure.
	for _, o := range []string{"paired", "bad_hello", "full", "record_failed", "left",
		bridgeproto.ErrPairingFailed, bridgeproto.ErrCodeInvalid, bridgeproto.ErrCodeExpired,
		bridgeproto.ErrCredentialInvalid, bridgeproto.ErrTokenPairingOff, bridgeproto.ErrPairingRateLimited} {
		m.pairings.WithLabelValues(o)
	}
	return m
}

// knownTypes bounds the type label: a type outside it counts as "other".
var knownTypes = func() map[string]bool {
	k := map[string]bool{}
	for _, t := range []string{bridgeproto.TypeHello, bridgeproto.TypeHelloOK, bridgeproto.TypeStateSnapshot, bridgeproto.TypeActionRequest,
		bridgeproto.TypeActionRequestResult, bridgeproto.TypeCredentials, bridgeproto.TypeAPIEndpoints, bridgeproto.TypeAPIRequest,
		bridgeproto.TypeAPIResponse, bridgeproto.TypeStreamOpen, bridgeproto.TypeStreamEvent, bridgeproto.TypeStreamEvents, bridgeproto.TypeStreamEnd,
		bridgeproto.TypeStreamError, bridgeproto.TypeRequestCancel, bridgeproto.TypeAction, bridgeproto.TypeActionResult,
		bridgeproto.TypeShellRuntime, bridgeproto.TypeKeepalive, bridgeproto.TypeError, bridgeproto.TypeConversationLink,
		bridgeproto.TypeConversationMessage, bridgeproto.TypeConversationInject, bridgeproto.TypeInjectResult, bridgeproto.TypeConversationLoop} {
		k[t] = true
	}
	return k
}()

func (m *hubMetrics) frame(dir string, typ string, n int) {
	if !knownTypes[typ] {
		typ = "other"
	}
	cache, bytes := &m.framesIn, m.bytesIn
	if dir == "out" {
		cache, bytes = &m.framesOut, m.bytesOut
	}
	c, ok := cache.Load(typ)
	if !ok {
		c, _ = cache.LoadOrStore(typ, m.frames.WithLabelValues(dir, typ))
	}
	c.(prometheus.Counter).Inc()
	bytes.Add(float64(n))
}

// typeOf reads the Type field every outgoing bridge message has.
func typeOf(v any) string {
	rv := reflect.Indirect(reflect.ValueOf(v))
	if rv.Kind() != reflect.Struct {
		return "other"
	}
	f := rv.FieldByName("Type")
	if f.Kind() != reflect.String {
		return "other"
	}
	return f.String()
}

func (m *hubMetrics) closed(code int) { m.closes.WithLabelValues(strconv.Itoa(code)).Inc() }

// Collectors are the hub's series for the supervisor's registry: the
// counters above and gauges read from the hub on each scrape.
func (h *Hub) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		h.m.pairings, h.m.frames, h.m.bytes, h.m.closes, h.m.refused,
		clientsByPlatform{h},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svcd_bridge_unpaired", Help: "Upgraded connections whose hello has not arrived yet."},
			func() float64 { return float64(h.Unpaired()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svcd_bridge_pending", Help: "Requests and actions waiting for a plugin's answer."},
			func() float64 {
				h.mu.Lock()
				defer h.mu.Unlock()
				return float64(len(h.pending))
			}),
	}
}

// clientPlatforms bounds the platform label of svcd_bridge_clients: the
// platforms the bridge knows, "other" for any other value (a record's
// platform is whatever the plugin captured on), "none" for a client that
// neither declared nor captured any. Five series, whatever the clients send.
var clientPlatforms = []string{bridgeproto.PlatformA, bridgeproto.PlatformB, bridgeproto.PlatformC, "other", "none"}

const clientsHelp = "Paired browser plugin connections by platform: the platforms a client declared in its hello or holds captured credentials for (a client serving two counts under both; none: neither)."

var clientsDesc = prometheus.NewDesc("svcd_bridge_clients", clientsHelp, []string{"platform"}, nil)

// clientsByPlatform counts the live connections per platform on each scrape
// (nothing on the frame or request path).
type clientsByPlatform struct{ h *Hub }

func (c clientsByPlatform) Describe(ch chan<- *prometheus.Desc) { ch <- clientsDesc }

func (c clientsByPlatform) Collect(ch chan<- prometheus.Metric) {
	for p, n := range c.h.clientsPerPlatform() {
		ch <- prometheus.MustNewConstMetric(clientsDesc, prometheus.GaugeValue, float64(n), p)
	}
}

// platformLabel maps a platform to its bounded label value.
func platformLabel(p string) string {
	if bridgeproto.ValidPlatform(p) {
		return p
	}
	return "other"
}

// clientsPerPlatform has an entry (maybe 0) for every clientPlatforms value.
func (h *Hub) clientsPerPlatform() map[string]int {
	out := make(map[string]int, len(clientPlatforms))
	for _, p := range clientPlatforms {
		out[p] = 0
	}
	conns := h.liveConns()
	if len(conns) == 0 {
		return out
	}
	// Platforms each client captured credentials on (the credential index
	// the relay keeps; rebuilt only when the state moved).
	captured := map[string][]string{}
	if idx := h.credIndexNow(); idx != nil {
		for p, clients := range idx.byPlatform {
			for id := range clients {
				captured[id] = append(captured[id], p)
			}
		}
	}
	for _, c := range conns {
		seen := make(map[string]bool, 4)
		for _, list := range [][]string{c.platforms, captured[c.clientID]} {
			for _, p := range list {
				seen[platformLabel(p)] = true
			}
		}
		if len(seen) == 0 {
			seen["none"] = true
		}
		for p := range seen {
			out[p]++
		}
	}
	return out
}
