package supervisor

import (
	"net/http"
	"os"
	"runtime"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/systemstate"
	"github.com/svcd/svcd/shared/version"
	"github.com/svcd/svcd/supervisor/openapi"
	"github.com/svcd/svcd/supervisor/status"
	"github.com/svcd/svcd/supervisor/workermgr"
	"github.com/svcd/svcd/workers/hostops"
	"github.com/svcd/svcd/workers/hostops/sandbox"
)

func (s *Server) discoveryRoutes() []Route {
	d := func(method, path, name, kind, summary string, h HandlerFn) Route {
		return Route{Method: method, Path: path, Name: name, Area: "discovery", Scope: ScopeDiscovery, Kind: kind, Summary: summary, Handle: h}
	}
	readyz := d(http.MethodGet, "/readyz", "readyz", KindDiagnostic,
		"Readiness: 200 on the active (leader) node once it has caught up with the log (503 catching_up until then) and recovered the work an earlier run left (503 settling until then), 503 with role and leader hint on a standby (200 there with ?standbyok=true).", s.handleReadyz)
	readyz.Response = readyView{}
	readyz.Errors = openapi.Codes{http.StatusServiceUnavailable: {"settling", "standby", "catching_up"}}
	readyz.Query = []Field{{Name: "standbyok", Type: "boolean", Note: "answer 200 on a standby too"}}
	healthz := d(http.MethodGet, "/healthz", "healthz", KindDiagnostic, "Minimal liveness probe; body is the text ok.", s.handleHealthz)
	healthz.Raw = true
	healthz.Response = openapi.Raw{ContentType: "text/plain", Description: "the text ok"}
	metrics := d(http.MethodGet, "/metrics", "metrics", KindDiagnostic, "Prometheus metrics: request counts and latencies by route, raft state.",
		func(w http.ResponseWriter, r *http.Request) error { s.metrics.handler().ServeHTTP(w, r); return nil })
	metrics.Raw = true
	metrics.Response = openapi.Raw{ContentType: "text/plain", Description: "Prometheus text exposition format"}
	typed := func(rt Route, response any) Route { rt.Response = response; return rt }
	return []Route{
		typed(d(http.MethodGet, "/describe", "describe", KindRead, "Index of the scoped describes; start here.", s.handleDescribeIndex), describeIndex{}),
		typed(d(http.MethodGet, "/describe/business", "describe.business", KindRead, "Business self-description: browser requests, agent sessions, renewal, queries.", s.handleDescribeScope(ScopeBusiness)), describeScope{}),
		typed(d(http.MethodGet, "/describe/control", "describe.control", KindRead, "Control self-description: recommended order, system control, plugin management, host_operations.", s.handleDescribeScope(ScopeControl)), describeScope{}),
		typed(d(http.MethodGet, "/health", "health", KindDiagnostic, "Health summary including the local system state and raft role.", s.handleHealth), healthAnswer{}),
		typed(d(http.MethodGet, "/version", "version", KindRead, "Light version summary.", func(w http.ResponseWriter, r *http.Request) error { api.WriteOK(w, version.Get()); return nil }), version.Info{}),
		typed(d(http.MethodGet, "/v1/capabilities", "capabilities", KindRead, "Enabled capabilities split into read, write and diagnostic endpoints, plus cautions.", s.handleCapabilities), capabilitiesAnswer{}),
		healthz,
		readyz,
		typed(d(http.MethodGet, "/rolez", "rolez", KindDiagnostic, "This node's leader/standby view from raft.", func(w http.ResponseWriter, r *http.Request) error { api.WriteOK(w, s.roleView()); return nil }), roleView{}),
		typed(d(http.MethodGet, "/v1/runtime", "runtime", KindDiagnostic, "Runtime snapshot: process, memory, goroutines, config summary, raft.", s.handleRuntime), runtimeAnswer{}),
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
	body := readyView{Ready: leader && !settling, Role: role.Role, LeaderID: role.LeaderID, LeaderAddr: role.LeaderAddr, LeaderAPI: v.LeaderAPI, Term: role.Term}
	if !s.caughtUp.Load() {
		// Just started: this node's FSM may still lack writes the cluster
		// acknowledged (consistentread.go catchUp).
		body.Ready = false
		api.WriteJSON(w, http.StatusServiceUnavailable, notReady{
			Error: api.ErrorField{Code: "catching_up", Message: "this node has not yet applied the state the leader had committed when it started; retry shortly"},
			Data:  body,
		})
		return nil
	}
	if settling {
		// Just elected: leftover work of an earlier run is still being
		// recovered; reads could show it as running.
		api.WriteJSON(w, http.StatusServiceUnavailable, notReady{
			Error: api.ErrorField{Code: "settling", Message: "this node has just become the leader and is still recovering the work an earlier run left; retry shortly"},
			Data:  body,
		})
		return nil
	}
	if leader || r.URL.Query().Get("standbyok") == "true" {
		body.Ready = true
		api.WriteOK(w, body)
		return nil
	}
	api.WriteJSON(w, http.StatusServiceUnavailable, notReady{
		Error: api.ErrorField{Code: "standby", Message: "this node is a standby; the active node is " + role.LeaderID},
		Data:  body,
	})
	return nil
}

// readyView is /readyz's data: this node's readiness and the leader hint.
// Fields here and below are in the order the maps they replaced encoded
// them (byte-compatible answers).
type readyView struct {
	LeaderAddr string `json:"leader_addr"`
	LeaderAPI  string `json:"leader_api"`
	LeaderID   string `json:"leader_id"`
	Ready      bool   `json:"ready"`
	Role       string `json:"role"`
	Term       uint64 `json:"term"`
}

// notReady is /readyz's 503: the error envelope with the readiness as data.
type notReady struct {
	Data  readyView      `json:"data"`
	Error api.ErrorField `json:"error"`
	OK    bool           `json:"ok"`
}

// healthAnswer is GET /health's data.
type healthAnswer struct {
	// FailedWorkers names workers given up after a crash loop.
	FailedWorkers []string           `json:"failed_workers"`
	Raft          raftstore.RoleInfo `json:"raft"`
	Role          string             `json:"role"`
	// Runner, RunningTasks and StartingTasks are this process as its
	// tasks name it ("<node>/<boot id>"), the tasks it runs now and the
	// starts in flight: a leader's task reaper asks them to tell a batch
	// still running here from one that is over.
	Runner        string            `json:"runner"`
	RunningTasks  []string          `json:"running_tasks"`
	StartingTasks int               `json:"starting_tasks"`
	Sandbox       map[string]any    `json:"sandbox"` // sandbox.Report.Levels: per layer, level and reason
	StartedAt     time.Time         `json:"started_at"`
	Status        string            `json:"status"`
	System        systemstate.State `json:"system"`
	UptimeMs      int64             `json:"uptime_ms"`
	Version       string            `json:"version"`
	Workers       []status.Worker   `json:"workers"`
}

// runtimeAnswer is GET /v1/runtime's data. WorkingDir and the config's
// paths are there only for a tokened caller.
type runtimeAnswer struct {
	Config     runtimeConfig      `json:"config"`
	ExecShell  runtimeExecShell   `json:"exec_shell"`
	GoVersion  string             `json:"go_version"`
	Goroutines int                `json:"goroutines"`
	Memory     runtimeMemory      `json:"memory"`
	PID        int                `json:"pid"`
	Raft       raftstore.RoleInfo `json:"raft"`
	// Redacted: paths (the token file's, the data dir, the working
	// directory) tell a local attacker where the secret is; only a tokened
	// caller sees them.
	Redacted   bool             `json:"redacted"`
	Sandbox    *sandbox.Report  `json:"sandbox"` // the full report, roots included: a tokened route
	StartedAt  time.Time        `json:"started_at"`
	UptimeMs   int64            `json:"uptime_ms"`
	Workers    []workermgr.Info `json:"workers"`
	WorkingDir *string          `json:"working_dir,omitempty"`
}

// runtimeExecShell: the interpreter of exec commands, and whether commands
// of plain words run without it (docs/hostops.md: only where /bin/sh is
// dash, and not through the rlimit shim).
type runtimeExecShell struct {
	PlainCommandsDirect bool   `json:"plain_commands_direct"`
	Resolved            string `json:"resolved"`
	Shell               string `json:"shell"`
}

func execShellInfo() runtimeExecShell {
	return runtimeExecShell{Shell: hostops.Shell, Resolved: hostops.ResolvedShell(),
		PlainCommandsDirect: hostops.ShellIsDash() && !execDirectOff()}
}

// execDirectOff: SVCD_EXEC_DIRECT=off, for benchmarks only: every command
// through /bin/sh, as before commands of plain words ran directly
// (BenchmarkExecHopSteps).
func execDirectOff() bool { return os.Getenv("SVCD_EXEC_DIRECT") == "off" }

type runtimeConfig struct {
	ConfigFile   *string `json:"config_file,omitempty"`
	DataDir      *string `json:"data_dir,omitempty"`
	Listen       string  `json:"listen"`
	MaxBodyBytes int64   `json:"max_body_bytes"`
	NodeID       string  `json:"node_id"`
	RaftAddr     string  `json:"raft_addr"`
	TokenSource  string  `json:"token_source"`
}

type runtimeMemory struct {
	GCCycles       uint64 `json:"gc_cycles"`
	HeapAllocBytes uint64 `json:"heap_alloc_bytes"`
	SysBytes       uint64 `json:"sys_bytes"`
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
	proc := s.tasks.Process()
	api.WriteOK(w, healthAnswer{
		Status:        health,
		Version:       version.Get().Version,
		Role:          role.Role,
		Runner:        proc.Runner,
		RunningTasks:  proc.Running,
		StartingTasks: proc.Starting,
		System:        s.SystemState(),
		Raft:          role,
		UptimeMs:      time.Since(s.started).Milliseconds(),
		StartedAt:     s.started,
		Workers:       s.workerStatus(),
		FailedWorkers: failed,
		Sandbox:       s.sandboxLevels(),
	})
	return nil
}

func (s *Server) handleRuntime(w http.ResponseWriter, r *http.Request) error {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	out := runtimeAnswer{
		PID:        os.Getpid(),
		StartedAt:  s.started,
		UptimeMs:   time.Since(s.started).Milliseconds(),
		GoVersion:  runtime.Version(),
		Goroutines: runtime.NumGoroutine(),
		Memory:     runtimeMemory{HeapAllocBytes: ms.HeapAlloc, SysBytes: ms.Sys, GCCycles: uint64(ms.NumGC)},
		Config: runtimeConfig{
			Listen:       s.cfg.Listen,
			NodeID:       s.cfg.NodeID,
			RaftAddr:     s.cfg.RaftAddr,
			MaxBodyBytes: s.cfg.MaxBodyBytes,
			TokenSource:  s.tokenSource(false),
		},
		ExecShell: execShellInfo(),
		Raft:      s.node.Role(),
		Workers:   s.workerList(),
		Redacted:  true,
	}
	report := s.sandbox.Load()
	if report != nil {
		redacted := report.WithoutPaths()
		out.Sandbox = &redacted
	}
	if s.requireToken(r) == nil {
		wd, _ := os.Getwd()
		dataDir, configFile := s.cfg.DataDir, s.cfg.ConfigFile
		out.WorkingDir = &wd
		out.Redacted = false
		out.Config.DataDir, out.Config.ConfigFile = &dataDir, &configFile
		out.Config.TokenSource = s.tokenSource(true)
		out.Sandbox = report
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
