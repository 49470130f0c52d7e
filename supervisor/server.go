// Package supervisor is svcd's main daemon: it owns the listener, routing,
// auth and host guards, the describe documents and status views, and the raft
// node that holds durable state.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/clustertls"
	"github.com/svcd/svcd/shared/guard"
	"github.com/svcd/svcd/shared/jsoncache"
	"github.com/svcd/svcd/shared/keyderive"
	"github.com/svcd/svcd/supervisor/cluster"
	"github.com/svcd/svcd/supervisor/config"
	"github.com/svcd/svcd/supervisor/datalock"
	"github.com/svcd/svcd/supervisor/renewal"
	"github.com/svcd/svcd/supervisor/statewrite"
	"github.com/svcd/svcd/supervisor/tasks"
	"github.com/svcd/svcd/supervisor/telemetry"
	"github.com/svcd/svcd/supervisor/workermgr"
	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// Server is one running supervisor.
type Server struct {
	cfg   config.Config
	log   hclog.Logger
	node  *raftstore.Node
	token string
	// clusterKey is cluster_key or else the shared token: raft's transport
	// key and the root of the keys keyderive derives (pairing hashes,
	// snapshot MACs), the same on every node and in no snapshot.
	clusterKey []byte
	// agentdEP is this daemon's agentd address and secret (agentd_endpoint.go).
	agentdEP  agentdEndpoint
	tokenFile string
	dirLock   *datalock.Lock // data_dir/LOCK, held from New to Close
	guard     *guard.Policy  // Host allow-list and the cross-site write guard, shared by every listener
	routes    []Route
	errTap    errorTap // tests only: told every error a handler answers
	router    *mux.Router
	handler   http.Handler
	metrics   *metrics
	// metricsReg is /metrics' registry (metrics.go), made before raft opens.
	metricsReg *prometheus.Registry
	// hostopsMetrics counts exec and file calls (nil until newMetrics).
	hostopsMetrics *telemetry.HostOps
	workers        *workermgr.Manager // worker processes (hostops …) over go-plugin
	browser        *browserSide       // browser bridge hub and relay engine
	execSlots      chan struct{}      // one per exec running; full means 429 exec_busy
	// stuckRestart: a restart of a hostops worker that stopped reading its
	// exec hop is under way (restartStuckWorker), one at a time.
	stuckRestart atomic.Bool
	started      time.Time
	// closers stop the parts New started (workers, bridge hub …), in reverse
	// order, before raft shuts down.
	closers   []func() error
	closeOnce sync.Once
	closeErr  error
	// modeHooks run after every committed system mode change (the bridge
	// pushes state_snapshot to every plugin).
	modeHooks []func()
	// cluster records leadership, joins and forwards standby writes;
	// leaderHooks run on every leadership change.
	cluster     *cluster.Cluster
	leaderHooks []func(leader bool)
	// clusterTLS holds the node's certificate for raft and forwarded calls
	// (nil: plain TCP); ReloadClusterTLS re-reads it (clustertls.go).
	clusterTLS *clustertls.Holder
	// leaderSettled is true once this node, as leader, has run its
	// leadership hooks (leftover work recovered, scheduler started): until
	// then /readyz says settling, so nobody reads the crashed run's states.
	leaderSettled atomic.Bool
	// caughtUp is true once this node has applied the leader's commit index
	// as of a moment after it started (consistentread.go): until then
	// /readyz says catching_up.
	caughtUp atomic.Bool
	// convs are the renewal conversation records; tasks the task records.
	convs *renewal.Store
	tasks *tasks.Store
	// reaper ends, while this node leads, the tasks of runners that are
	// gone (tasks_reaper.go).
	reaper *tasks.Reaper
	// convJSON and taskJSON keep the list routes' entries' JSON (listjson.go).
	convJSON *jsoncache.Entries[raftstore.Conversation]
	taskJSON *tasks.SummaryJSON
	sched    *renewal.Driver // ticks the scheduler worker while this node leads
	// ingests are live ingests running in the background (bridge replies);
	// Close cancels ingestCtx and waits for them before raft stops.
	ingests      sync.WaitGroup
	ingestCtx    context.Context
	ingestCancel context.CancelFunc
	// stateAnswer is the last encoded system state answer (statecache.go).
	stateAnswer atomic.Pointer[encodedState]
	// instr runs instruction blocks and live ingest (routes_instructions.go).
	instr *instructionsSide
	// sandbox is the exec sandbox as probed at start (sandbox.go), its
	// limits and roots updated by each SIGHUP that changes them
	// (exec_reload.go); nil without workers.
	sandbox atomic.Pointer[sandbox.Report]
	// exec is the exec part of the config as last applied (exec_reload.go);
	// nil until the workers start.
	exec atomic.Pointer[execSettings]
}

// New opens the raft node, resolves the shared token and builds the routes.
// It does not listen; call Serve.
func New(ctx context.Context, cfg config.Config, log hclog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		log:     log,
		guard:   guard.New(cfg.Listen, cfg.AllowedHosts, cfg.AllowedOrigins),
		started: time.Now().UTC(),
		// One place per exec allowed to run at once (exec_max_concurrent).
		execSlots: make(chan struct{}, cfg.ExecMaxConcurrent),
	}
	if dir := os.Getenv(ErrorTapDirEnv); dir != "" { // the e2e harness only
		s.errTap = undeclaredTap(dir)
	}
	ti, err := resolveToken(cfg)
	if err != nil {
		return nil, err
	}
	s.token, s.tokenFile = ti.token, ti.file
	if s.clusterTLS, err = openClusterTLS(cfg, log); err != nil {
		return nil, err
	}
	// One daemon per data dir: lock it before raft opens its log store (a
	// second daemon would otherwise wait on bolt and say only "timeout").
	// The lock outlives raft (Close) and is dropped if New fails.
	lock, err := datalock.Acquire(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	s.dirLock = lock
	built := false
	defer func() {
		if !built {
			lock.Release()
		}
	}()
	s.logToken(ti)

	// The registry and raft's go-metrics sink exist before raft starts, so
	// the first election and the start-up applies are counted too.
	s.metricsReg = prometheus.NewRegistry()
	if sink, err := telemetry.NewRaftSink(s.metricsReg); err != nil {
		s.log.Warn("raft metrics not exposed", "error", err)
	} else {
		s.onClose(func() error { sink.Close(); return nil })
	}
	s.registerClusterRefusals()

	joining := len(cfg.Join) > 0
	clusterKey := cfg.ClusterKey
	if clusterKey == "" {
		clusterKey = s.token
	}
	s.clusterKey = []byte(clusterKey)
	node, err := raftstore.Open(raftstore.Config{
		NodeID:        cfg.NodeID,
		DataDir:       cfg.DataDir,
		RaftAddr:      cfg.RaftAddr,
		RaftAdvertise: cfg.RaftAdvertise,
		ClusterKey:    []byte(clusterKey),
		SnapshotKey:   keyderive.Derive([]byte(clusterKey), keyderive.SnapshotAuth),
		TLS:           s.clusterTLS,
		// A node told to join never forms a cluster of its own.
		Bootstrap: cfg.Bootstrap && !joining,
		Timings:   cfg.ClusterTimings(),
		Logger:    log,
		// A newer minor release's data dir is refused (issue 35).
		AllowDowngrade: cfg.AllowDowngrade,
	})
	if err != nil {
		return nil, err
	}
	s.node = node
	if err := checkJoinState(node, cfg); err != nil {
		node.Shutdown()
		return nil, err
	}
	if cfg.Bootstrap && !joining && !node.HasPeers() {
		// A lone bootstrapping node becomes leader on its own; wait for it and
		// for the log to be applied so the first read sees every acknowledged
		// write. A member of a larger cluster does not wait: it serves as a
		// standby until a leader exists (a cold start of the whole cluster
		// must not deadlock on the first node up).
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if err := node.WaitLeader(wctx); err != nil {
			node.Shutdown()
			return nil, err
		}
		if node.IsLeader() {
			if err := node.Barrier(wctx); err != nil {
				node.Shutdown()
				return nil, fmt.Errorf("apply raft log: %w", err)
			}
		}
	}
	// Both write through s.apply (one path, API errors) like the bridge.
	s.convs = renewal.New(bridgeHost{s})
	s.convJSON, s.taskJSON = newConvJSON(), tasks.NewSummaryJSON()
	s.tasks = tasks.New(bridgeHost{s}, cfg.NodeID)
	s.reaper = tasks.NewReaper(s.tasks, s.peerProcess, tasks.ReapLostAfter, s.log.Named("tasks"))
	s.onClose(func() error { s.reaper.Stop(); return nil })
	s.setupRenewal()
	// Workers start once raft is ready; their shutdown is a closer, so it
	// runs before raft stops.
	if err := s.startWorkers(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("start workers: %w", err)
	}
	if err := s.startBrowser(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("start browser bridge: %w", err)
	}
	s.ingestCtx, s.ingestCancel = context.WithCancel(context.Background())
	s.browser.hub.OnConversation(s.onConversation)
	s.onClose(func() error { s.ingestCancel(); s.ingests.Wait(); return nil })
	s.onClose(func() error { s.sched.Stop(); return nil })
	s.metrics = newMetrics(s)
	s.routes = s.routeTable()
	applyTokenPolicy(s.routes, s.cfg.RequireToken)
	for _, rt := range s.routes {
		if rt.BodyType != "" {
			s.guard.DeclareBodyType(rt.Method, rt.Path, rt.BodyType)
		}
	}
	s.router = s.buildRouter()
	// The guards wrap the whole router, not single routes: a route added
	// later cannot skip them. Host first (a rebinding page learns nothing),
	// then the write guard (Origin, Sec-Fetch-Site, JSON bodies).
	s.handler = s.frontDoor(s.guard.Hosts(s.guard.Writes(s.router)))
	// Leadership hooks (recovery, the scheduler) touch every part built
	// above: follow leadership only once the server is complete.
	s.startCluster()
	built = true
	return s, nil
}

// Handler is the whole HTTP surface with its guards, for tests and benchmarks.
func (s *Server) Handler() http.Handler { return s.handler }

// Node exposes the raft node (tests and in-process tools).
func (s *Server) Node() *raftstore.Node { return s.node }

// onClose registers fn to run at Close, before raft shuts down.
func (s *Server) onClose(fn func() error) { s.closers = append(s.closers, fn) }

// Close stops everything New started, then shuts the raft node down. Later
// calls return the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		for i := len(s.closers) - 1; i >= 0; i-- {
			if err := s.closers[i](); err != nil {
				errs = append(errs, err)
			}
		}
		if err := s.node.Shutdown(); err != nil {
			errs = append(errs, err)
		}
		if err := s.dirLock.Release(); err != nil {
			errs = append(errs, err)
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// buildRouter registers every route of the table, wrapped with metrics, the
// body cap and the token check, plus JSON 404 and 405 handlers.
func (s *Server) buildRouter() *mux.Router {
	r := mux.NewRouter()
	for _, rt := range s.routes {
		route := r.NewRoute()
		if !strings.Contains(rt.Path, "{") {
			// mux tries every route's path regexp in turn until one matches;
			// for a template without variables a string comparison gives the
			// same answer far sooner, so it goes first and the regexp only
			// runs on the path it will match. Vars, 404 and 405 stay mux's.
			path := rt.Path
			route = route.MatcherFunc(func(req *http.Request, _ *mux.RouteMatch) bool { return req.URL.Path == path })
		}
		methods := []string{rt.Method}
		if rt.Method == http.MethodGet && !rt.NoLimit {
			// HEAD is GET without the body: net/http discards what the
			// handler writes. Streams and WebSocket upgrades (NoLimit) stay
			// GET only: a HEAD there would hold the connection open.
			methods = append(methods, http.MethodHead)
		}
		route.Path(rt.Path).Methods(methods...).Name(rt.Method + " " + rt.Path).Handler(s.wrap(rt))
	}
	r.NotFoundHandler = s.metrics.instrument("unmatched", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		api.WriteError(w, api.NotFound("route_not_found", "no route %s %s; GET /describe lists the routes", req.Method, req.URL.Path))
	}))
	r.MethodNotAllowedHandler = s.metrics.instrument("unmatched", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		api.WriteError(w, api.NewError(http.StatusMethodNotAllowed, "method_not_allowed", "%s is not allowed on %s", req.Method, req.URL.Path))
	}))
	return r
}

func (s *Server) wrap(rt Route) http.Handler {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rt.Auth {
			if err := s.requireToken(r); err != nil {
				api.WriteError(w, err)
				return
			}
		}
		if !rt.NoLimit {
			limit := s.cfg.MaxBodyBytes
			if rt.MaxBody > 0 {
				limit = rt.MaxBody
			}
			// The cap holds on a standby too: a declared oversize body is a
			// 413 here, not something to pass on to the leader.
			if r.ContentLength > limit {
				api.WriteError(w, api.NewError(http.StatusRequestEntityTooLarge, "body_too_large", "request body is larger than %d bytes", limit))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		if s.forwards(rt) {
			// A standby: the leader serves stateful calls (and says so).
			s.cluster.Forward(w, r)
			return
		}
		w.Header().Set(cluster.ServedByHeader, s.cfg.NodeID)
		if s.node != nil {
			rw := responseWriterOf(w)
			rw.index, w = s.node.AppliedIndex, rw
		}
		if s.errTap != nil { // tests only (errortap.go)
			var done func()
			w, done = tapErrors(w, rt, s.errTap)
			defer done()
		}
		if rt.readsState() && s.cluster != nil {
			// Linearizable unless the caller asked for ?stale (consistentread.go).
			if err := s.readGate(w, r); err != nil {
				api.WriteError(w, err)
				return
			}
		}
		if err := rt.Handle(w, r); err != nil {
			api.WriteError(w, err)
		}
	})
	return s.metrics.instrument(rt.Method+" "+rt.Path, h)
}

// forwards reports whether this node hands rt's call to the leader: a
// state-changing route that is not Local, on a node that is not the leader.
func (s *Server) forwards(rt Route) bool {
	if s.cluster == nil || rt.Local {
		return false
	}
	switch rt.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return !s.node.IsLeader()
}

// decode reads a JSON body under the configured cap.
func (s *Server) decode(r *http.Request, dst any) error {
	return api.DecodeJSON(r, dst, s.cfg.MaxBodyBytes)
}

// apply writes a command through raft and maps store errors onto API errors.
func (s *Server) apply(ctx context.Context, typ string, payload any) (any, error) {
	return statewrite.Writer{Node: s.node}.Apply(ctx, typ, payload)
}
