package supervisor

import (
	"context"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/openapi"
	"github.com/svcd/svcd/supervisor/renewal"
	"github.com/svcd/svcd/supervisor/workermgr"
	"github.com/svcd/svcd/workers/scheduler"
)

// setupRenewal wires the conversation store's change hook (state_snapshot
// to every plugin) and the scheduler driver, which follows leadership: on
// becoming leader, leftovers of an abnormal exit are recovered (execution
// states to idle, running jobs to pending) and ticking starts; on losing it,
// ticking stops. Only the leader's scheduler dispatches.
func (s *Server) setupRenewal() {
	s.convs.Changed = func() {
		if s.browser != nil && s.browser.hub != nil {
			s.browser.hub.BroadcastSnapshot()
		}
	}
	rs := s.cfg.Renewal()
	inject := func(ctx context.Context, clientID string, m bridgeproto.ConversationInject) (*bridgeproto.InjectResult, error) {
		if clientID == "" {
			return nil, api.Unavailable("no_plugin_for_conversation", "no plugin has linked this conversation")
		}
		return s.browser.hub.Inject(ctx, clientID, m)
	}
	// The hub is built after this; both are looked up when called.
	reachable := func(clientID string) bool { return s.browser.hub.Reachable(clientID) }
	tick := func(ctx context.Context, host scheduler.Host, now time.Time, set scheduler.Settings) (scheduler.Result, error) {
		var res scheduler.Result
		err := workermgr.Call(ctx, s.workers, scheduler.Name, func(w scheduler.Scheduler, _ *workermgr.Lease) error {
			var err error
			res, err = w.Tick(ctx, host, now, set)
			return err
		})
		return res, err
	}
	s.sched = renewal.NewDriver(s.convs, func() string { return s.SystemState().Mode }, inject, reachable, tick,
		scheduler.Settings{IdleAfterMs: rs.IdleAfterMs, Message: rs.Message, MaxFailures: rs.MaxFailures, MaxRenewals: rs.MaxRenewals, MaxPerTick: 100},
		rs.Tick, s.log.Named("scheduler"))
	s.OnLeadership(func(leader bool) {
		if !leader {
			s.sched.Stop()
			s.reaper.Stop()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if n, err := s.convs.Recover(ctx); err != nil {
			s.log.Warn("could not reset leftover conversation execution states", "error", err)
		} else if n > 0 {
			s.log.Info("conversation execution states reset to idle after an abnormal exit", "count", n)
		}
		if n, err := s.convs.RecoverJobs(ctx); err != nil {
			s.log.Warn("could not return running renewal jobs to pending", "error", err)
		} else if n > 0 {
			s.log.Info("renewal jobs left running returned to pending", "count", n)
		}
		// The reaper's first pass ends what an earlier process of this node
		// and nodes that are gone left running, before the scheduler starts;
		// a node that does not answer keeps its batches for ReapLostAfter.
		s.reaper.Start()
		if _, err := s.reaper.Pass(ctx); err != nil {
			s.log.Warn("could not end the tasks an earlier run left running", "error", err)
		}
		if s.cfg.WorkerExecutable != "" {
			s.sched.Start()
		}
	})
}

func (s *Server) renewalRoutes() []Route {
	set := func(status string) HandlerFn {
		return func(w http.ResponseWriter, r *http.Request) error { return s.handleConvSet(w, r, status) }
	}
	path := "/v1/renewal/conversations/{local_conversation_id}"
	// manual and auto decode the same body and refuse a pause_reason.
	noReason := []Field{{Name: "pause_reason", Type: "string", Note: "refused here (422 invalid_field): only .../paused takes it"}}
	setErrors := openapi.Codes{http.StatusUnprocessableEntity: {"invalid_local_conversation_id", "invalid_field"}, http.StatusNotFound: {"unknown_conversation"}, http.StatusServiceUnavailable: {"no_plugin_for_conversation"}}
	return []Route{
		{Method: http.MethodGet, Path: "/v1/renewal/jobs", Name: "renewal.jobs", Area: "renewal", Scope: ScopeBusiness, Kind: KindRead,
			Query: []Field{
				{Name: "local_conversation_id", Type: "string", Note: "one conversation's jobs (404 if unknown)"},
				{Name: "limit", Type: "integer", Default: 50, Note: "1 to 500"},
			},
			Response: jobsAnswer{}, Errors: openapi.Codes{http.StatusNotFound: {"unknown_conversation"}, http.StatusUnprocessableEntity: {"invalid_query", "invalid_local_conversation_id"}, http.StatusBadRequest: {"invalid_query"}},
			Summary: "Renewal jobs newest first: job_id, local_conversation_id, message, due_at, attempts, status (pending, running, done, failed, canceled), last_error, delivery_ack, inject_id, timestamps; plus the scheduler's tick record (skipped_system_paused).",
			Handle:  s.handleJobs},
		{Method: http.MethodGet, Path: "/v1/renewal/scheduler", Name: "renewal.scheduler", Area: "renewal", Scope: ScopeBusiness, Kind: KindRead,
			Response: schedulerAnswer{},
			Summary:  "The scheduler: whether this node ticks (leader only), its settings, the last tick's result and error, and the durable tick record (total, skipped_system_paused, last times).",
			Handle:   s.handleScheduler},
		{Method: http.MethodGet, Path: "/v1/renewal/conversations", Name: "renewal.conversations", Area: "renewal", Scope: ScopeBusiness, Kind: KindRead,
			Query: []Field{{Name: "limit", Type: "integer", Default: 100, Note: "1 to 1000"},
				{Name: "cursor", Type: "string", Note: "next_cursor of the previous page (422 invalid_cursor if it is not one)"}},
			Response: map[string]any{}, Errors: openapi.Codes{http.StatusUnprocessableEntity: {"invalid_query", "invalid_cursor"}, http.StatusBadRequest: {"invalid_query"}},
			Summary: "Renewal conversations, most recently updated first (fields as in the single read); total counts them all; next_cursor pages on (absent on the last page; a conversation updated while paging moves to the front and is on no later page).",
			Handle:  s.handleConvList},
		{Method: http.MethodGet, Path: path, Name: "renewal.conversation", Area: "renewal", Scope: ScopeBusiness, Kind: KindRead,
			Response: raftstore.Conversation{}, Errors: openapi.Codes{http.StatusUnprocessableEntity: {"invalid_local_conversation_id"}, http.StatusNotFound: {"unknown_conversation"}},
			Summary: "One conversation: automation_status (manual, auto, paused), pause_reason, last_error, execution_state (idle, instruction_running, renewal_running), consecutive_failure_count, repeated_message_count, repeated_renewal_count, last_non_paused_automation_status, platform, client_id, remote_conversation_id, client_loop (the plugin's instruction loop as it last reported it: state running or stopped, reason, rounds, max_rounds) and timestamps. 404 unknown_conversation.",
			Handle:  s.handleConvGet},
		{Method: http.MethodPost, Path: path + "/manual", Name: "renewal.manual", Area: "renewal", Scope: ScopeBusiness, Kind: KindWrite,
			Body: noReason, Request: convSetRequest{}, Response: raftstore.Conversation{}, Errors: setErrors,
			Summary: "Set manual: no automatic generation or advancement. Answers the record; the plugins get a state_snapshot.", Handle: set(raftstore.AutoManual)},
		{Method: http.MethodPost, Path: path + "/auto", Name: "renewal.auto", Area: "renewal", Scope: ScopeBusiness, Kind: KindWrite,
			Body: noReason, Request: convSetRequest{}, Response: raftstore.Conversation{}, Errors: setErrors,
			Summary: "Set auto: the projector and dispatcher may advance it. Answers the record; the plugins get a state_snapshot.", Handle: set(raftstore.AutoAuto)},
		{Method: http.MethodPost, Path: path + "/paused", Name: "renewal.paused", Area: "renewal", Scope: ScopeBusiness, Kind: KindWrite,
			Body:    []Field{{Name: "pause_reason", Type: "string", Note: "at most 1024 bytes"}},
			Request: convSetRequest{}, Response: raftstore.Conversation{}, Errors: setErrors,
			Summary: "Set paused (optional pause_reason): the record and its jobs are kept, nothing advances. Answers the record; the plugins get a state_snapshot.", Handle: set(raftstore.AutoPaused)},
	}
}

func (s *Server) convID(r *http.Request) (string, error) {
	id := mux.Vars(r)["local_conversation_id"]
	if !bridgeproto.ValidLocalConversationID(id) {
		return "", errInvalidConvID()
	}
	return id, nil
}

func (s *Server) handleConvGet(w http.ResponseWriter, r *http.Request) error {
	id, err := s.convID(r)
	if err != nil {
		return err
	}
	c, ok := s.convs.Get(id)
	if !ok {
		return api.NotFound("unknown_conversation", "no conversation %q; GET /v1/renewal/conversations lists them", id)
	}
	api.WriteOK(w, c)
	return nil
}

func (s *Server) handleConvList(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryLimit(r, "limit", 100, 1000)
	if err != nil {
		return err
	}
	var after *renewal.Cursor
	if c, given := r.URL.Query()["cursor"]; given {
		cur, ok := renewal.ParseCursor(c[0])
		if !ok {
			return api.Unprocessable("invalid_cursor", "cursor must be the next_cursor of a previous page")
		}
		after = &cur
	}
	page, next, total := s.convs.Page(limit, after)
	return s.writeConvList(w, page, next, total)
}

// convSetRequest is the body of the conversation status routes.
type convSetRequest struct {
	PauseReason string `json:"pause_reason"`
}

func (s *Server) handleConvSet(w http.ResponseWriter, r *http.Request, status string) error {
	id, err := s.convID(r)
	if err != nil {
		return err
	}
	var body convSetRequest
	if err := s.decode(r, &body); err != nil {
		return err
	}
	if status != raftstore.AutoPaused && body.PauseReason != "" {
		return api.Unprocessable("invalid_field", "pause_reason only goes with .../paused")
	}
	if len(body.PauseReason) > 1024 || !utf8.ValidString(body.PauseReason) {
		return api.Unprocessable("invalid_field", "pause_reason must be valid UTF-8 of at most 1024 bytes")
	}
	if _, ok := s.convs.Get(id); !ok {
		return api.NotFound("unknown_conversation", "no conversation %q: a conversation exists once the plugin has linked it", id)
	}
	c, err := s.convs.SetStatus(r.Context(), id, status, body.PauseReason)
	if err != nil {
		return err
	}
	api.WriteOK(w, c)
	return nil
}

// errInvalidConvID is the one answer to a malformed local_conversation_id
// (the rule is the bridge's: bridgeproto.ValidLocalConversationID).
func errInvalidConvID() error {
	return api.Unprocessable("invalid_local_conversation_id", "local_conversation_id must be 1-128 bytes of [A-Za-z0-9._:-]")
}

// queryLimit parses a limit query parameter: absent gives def; not a whole
// number is a 400; outside 1..max a 422.
func queryLimit(r *http.Request, name string, def, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, api.BadRequest("invalid_query", "%s must be a whole number", name)
	}
	if n < 1 || n > max {
		return 0, api.Unprocessable("invalid_query", "%s must be 1 to %d, got %d", name, max, n)
	}
	return n, nil
}

func (s *Server) handleJobs(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryLimit(r, "limit", 50, 500)
	if err != nil {
		return err
	}
	id := r.URL.Query().Get("local_conversation_id")
	if id != "" {
		if !bridgeproto.ValidLocalConversationID(id) {
			return errInvalidConvID()
		}
		if _, ok := s.convs.Get(id); !ok {
			return api.NotFound("unknown_conversation", "no conversation %q", id)
		}
	}
	jobs := s.convs.Jobs(id, limit)
	if jobs == nil {
		jobs = []raftstore.RenewalJob{}
	}
	api.WriteOK(w, jobsAnswer{Count: len(jobs), Jobs: jobs, Ticks: s.convs.Ticks()})
	return nil
}

// jobsAnswer is GET /v1/renewal/jobs's data. Fields here and below in the
// order the maps they replaced encoded them (byte-compatible answers).
type jobsAnswer struct {
	Count int                    `json:"count"`
	Jobs  []raftstore.RenewalJob `json:"jobs"`
	Ticks raftstore.TickStats    `json:"ticks"`
}

// schedulerAnswer is GET /v1/renewal/scheduler's data.
type schedulerAnswer struct {
	LastError string              `json:"last_error"`
	LastTick  scheduler.Result    `json:"last_tick"`
	Leader    bool                `json:"leader"`
	Settings  schedulerSettings   `json:"settings"`
	Ticking   bool                `json:"ticking"`
	Ticks     raftstore.TickStats `json:"ticks"`
}

type schedulerSettings struct {
	IdleMs      int64  `json:"idle_ms"`
	MaxFailures int    `json:"max_failures"`
	MaxRenewals int    `json:"max_renewals"`
	Message     string `json:"message"`
	TickMs      int64  `json:"tick_ms"`
}

func (s *Server) handleScheduler(w http.ResponseWriter, r *http.Request) error {
	running, last, lastErr := s.sched.Status()
	rs := s.cfg.Renewal()
	api.WriteOK(w, schedulerAnswer{
		Ticking: running, Leader: s.node.IsLeader(), LastTick: last, LastError: lastErr, Ticks: s.convs.Ticks(),
		Settings: schedulerSettings{TickMs: rs.Tick.Milliseconds(), IdleMs: rs.IdleAfterMs, Message: rs.Message,
			MaxFailures: rs.MaxFailures, MaxRenewals: rs.MaxRenewals},
	})
	return nil
}
