package supervisor

import (
	"net/http"
	"os"
	"runtime"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/version"
	"github.com/svcd/svcd/supervisor/openapi"
)

func (s *Server) discoveryRoutes() []Route {
	d := func(method, path, name, kind, summary string, h HandlerFn) Route {
		return Route{Method: method, Path: path, Name: name, Area: "discovery", Scope: ScopeDiscovery, Kind: kind, Summary: summary, Handle: h}
	}
	readyz := d(http.MethodGet, "/readyz", "readyz", KindDiagnostic,
		"Readiness: 200 on the active (leader) node once it has recovered the work an earlier run left (503 settling until then), 503 with role and leader hint on a standby (200 there with ?standbyok=true).", s.handleReadyz)
	readyz.Response = map[string]any{}
	readyz.Errors = openapi.Codes{http.StatusServiceUnavailable: {"settling", "standby"}}
	readyz.Query = []Field{{Name: "standbyok", Type: "boolean", Note: "answer 200 on a standby too"}}
	healthz := d(http.MethodGet, "/healthz", "healthz", KindDiagnostic, "Minimal liveness probe; body is the text ok.", s.handleHealthz)
	healthz.Raw = true
	healthz.Response = openapi.Raw{ContentType: "text/plain", Description: "the text ok"}
	metrics := d(http.MethodGet, "/metrics", "metrics", KindDiagnostic, "Prometheus metrics: request counts and latencies by route, raft state.",
		func(w http.ResponseWriter, r *http.Request) error { s.metrics.handler().ServeHTTP(w, r); return nil })
	metrics.Raw = true
	metrics.Response = openapi.Raw{ContentType: "text/plain", Description: "Prometheus text exposition format"}
	typed := func(rt Route, response any) Route { rt.Response = response; return rt }
	doc := map[string]any{}
	return []Route{
		typed(d(http.MethodGet, "/describe", "describe", KindRead, "Index of the scoped describes; start here.", s.handleDescribeIndex), doc),
		typed(d(http.MethodGet, "/describe/business", "describe.business", KindRead, "Business self-description: browser requests, agent sessions, renewal, queries.", s.handleDescribeScope(ScopeBusiness)), doc),
		typed(d(http.MethodGet, "/describe/control", "describe.control", KindRead, "Control self-description: recommended order, system control, plugin management, host_operations.", s.handleDescribeScope(ScopeControl)), doc),
		typed(d(http.MethodGet, "/health", "health", KindDiagnostic, "Health summary including the local system state and raft role.", s.handleHealth), doc),
		typed(d(http.MethodGet, "/version", "version", KindRead, "Light version summary.", func(w http.ResponseWriter, r *http.Request) error { api.WriteOK(w, version.Get()); return nil }), version.Info{}),
		typed(d(http.MethodGet, "/v1/capabilities", "capabilities", KindRead, "Enabled capabilities split into read, write and diagnostic endpoints, plus cautions.", s.handleCapabilities), doc),
		healthz,
		readyz,
		typed(d(http.MethodGet, "/rolez", "rolez", KindDiagnostic, "This node's leader/standby view from raft.", func(w http.ResponseWriter, r *http.Request) error { api.WriteOK(w, s.roleView()); return nil }), roleView{}),
		typed(d(http.MethodGet, "/v1/runtime", "runtime", KindDiagnostic, "Runtime snapshot: process, memory, goroutines, config summary, raft.", s.handleRuntime), doc),
		metrics,
		typed(d(http.MethodGet, "/v1/openapi.json", "openapi", KindRead, "This API as an OpenAPI 3.1 document generated from the route table (the bare document, not the envelope).", s.handleOpenAPI),
			openapi.Raw{ContentType: "application/json", Description: "the OpenAPI 3.1 document"}),
	}
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok"))
	return nil
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) error {
	v := s.roleView()
	role := v.RoleInfo
	leader := role.Role == raftstore.RoleLeader
	settling := leader && !s.leaderSettled.Load()
	body := map[string]any{"ready": leader && !settling, "role": role.Role, "leader_id": role.LeaderID, "leader_addr": role.LeaderAddr, "leader_api": v.LeaderAPI, "term": role.Term}
	if settling {
		// Just elected: leftover work of an earlier run is still being
		// recovered; reads could show it as running.
		api.WriteJSON(w, http.StatusServiceUnavailable, map[string]any{
			"ok":    false,
			"error": api.ErrorField{Code: "settling", Message: "this node has just become the leader and is still recovering the work an earlier run left; retry shortly"},
			"data":  body,
		})
		return nil
	}
	if leader || r.URL.Query().Get("standbyok") == "true" {
		body["ready"] = true
		api.WriteOK(w, body)
		return nil
	}
	api.WriteJSON(w, http.StatusServiceUnavailable, map[string]any{
		"ok":    false,
		"error": api.ErrorField{Code: "standby", Message: "this node is a standby; the active node is " + role.LeaderID},
		"data":  body,
	})
	return nil
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) error {
	role := s.node.Role()
	health := "ok"
	if role.LeaderID == "" {
		health = "degraded"
	}
	failed := s.failedWorkers()
	if len(failed) > 0 {
		health = "degraded"
	}
	api.WriteOK(w, map[string]any{
		"status":     health,
		"version":    version.Get().Version,
		"role":       role.Role,
		"system":     s.SystemState(),
		"raft":       role,
		"uptime_ms":  time.Since(s.started).Milliseconds(),
		"started_at": s.started,
		"workers":    s.workerStatus(),
		// failed_workers names workers given up after a crash loop.
		"failed_workers": failed,
		"sandbox":        s.sandboxLevels(),
	})
	return nil
}

func (s *Server) handleRuntime(w http.ResponseWriter, r *http.Request) error {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	cfg := map[string]any{
		"listen":         s.cfg.Listen,
		"node_id":        s.cfg.NodeID,
		"raft_addr":      s.cfg.RaftAddr,
		"max_body_bytes": s.cfg.MaxBodyBytes,
		"token_source":   s.tokenSource(false),
	}
	out := map[string]any{
		"pid":        os.Getpid(),
		"started_at": s.started,
		"uptime_ms":  time.Since(s.started).Milliseconds(),
		"go_version": runtime.Version(),
		"goroutines": runtime.NumGoroutine(),
		"memory":     map[string]uint64{"heap_alloc_bytes": ms.HeapAlloc, "sys_bytes": ms.Sys, "gc_cycles": uint64(ms.NumGC)},
		"config":     cfg,
		"raft":       s.node.Role(),
		"workers":    s.workerList(),
		"sandbox":    s.sandbox, // the full report, roots included: a tokened route
		// Paths (the token file's, the data dir, the working directory) tell
		// a local attacker where the secret is; only a tokened caller sees them.
		"redacted": true,
	}
	if s.requireToken(r) == nil {
		wd, _ := os.Getwd()
		out["working_dir"] = wd
		out["redacted"] = false
		cfg["data_dir"] = s.cfg.DataDir
		cfg["config_file"] = s.cfg.ConfigFile
		cfg["token_source"] = s.tokenSource(true)
	}
	api.WriteOK(w, out)
	return nil
}

// tokenSource says where the shared token came from, never what it is.
// The file's path is shown only with withPath (a tokened caller).
func (s *Server) tokenSource(withPath bool) string {
	switch {
	case s.tokenFile != "" && withPath:
		return "file:" + s.tokenFile
	case s.tokenFile != "":
		return "file"
	}
	return "config"
}
