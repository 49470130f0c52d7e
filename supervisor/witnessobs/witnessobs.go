// Package witnessobs is the witness's optional HTTP listener (issue 35: the
// third voter had no /metrics and no health). It serves only what a monitor
// needs, never state or writes: /healthz (the process is up), /readyz (it
// is a member and knows a leader, so it counts towards a majority) and
// /metrics (its raft series under the names the daemon uses, so the alert
// rules and the dashboard cover it). It listens on loopback only: a witness
// has no token checks and no other listener (scrape it through the host's
// own Prometheus or node agent).
package witnessobs

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/guard"
	"github.com/svcd/svcd/supervisor/telemetry"
)

// Node is what the listener reads of the witness's raft node.
type Node interface {
	Role() raftstore.RoleInfo
	IsLeader() bool
	IsMember() bool
	Progress() raftstore.Progress
}

// Handler serves /healthz, /readyz and /metrics for the witness listening on
// listen (its Host header is checked as the daemon's is: DNS rebinding).
func Handler(listen string, node Node, version string) http.Handler {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	role := func(get func(raftstore.RoleInfo) uint64) func() float64 {
		return func() float64 { return float64(get(node.Role())) }
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gauge("svcd_raft_leader", "1 when this node is the raft leader.", func() float64 {
			if node.IsLeader() {
				return 1
			}
			return 0
		}),
		gauge("svcd_raft_term", "Current raft term.", role(func(r raftstore.RoleInfo) uint64 { return r.Term })),
		gauge("svcd_raft_last_index", "Last raft log index.", role(func(r raftstore.RoleInfo) uint64 { return r.LastIndex })),
		gauge("svcd_raft_applied_index", "Last raft index applied to the FSM.", role(func(r raftstore.RoleInfo) uint64 { return r.AppliedIdx })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "svcd_witness_info", Help: "Always 1 on a witness; the version label names its build.",
			ConstLabels: prometheus.Labels{"version": version}}, func() float64 { return 1 }),
		telemetry.RaftProgress{Read: node.Progress, IsLeader: node.IsLeader},
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		r := node.Role()
		v := readyView{Ready: node.IsMember() && r.LeaderID != "", Role: "witness", RaftState: r.RaftState, LeaderID: r.LeaderID, Term: r.Term}
		if v.Ready {
			api.WriteOK(w, v)
			return
		}
		api.WriteJSON(w, http.StatusServiceUnavailable, notReady{Data: v, Error: api.ErrorField{Code: "no_leader",
			Message: "this witness is not a member of a cluster with a known leader: it does not count towards a majority"}})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return guard.New(listen, nil, nil).Hosts(mux)
}

// readyView is /readyz's data, in the daemon's /readyz shape.
type readyView struct {
	Ready     bool   `json:"ready"`
	Role      string `json:"role"`
	RaftState string `json:"raft_state"`
	LeaderID  string `json:"leader_id"`
	Term      uint64 `json:"term"`
}

type notReady struct {
	Data  readyView      `json:"data"`
	Error api.ErrorField `json:"error"`
	OK    bool           `json:"ok"`
}
