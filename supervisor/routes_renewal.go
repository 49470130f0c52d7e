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
	"github.com/svcd/svcd/supervisor/renewal"
)

// recoverConversations returns execution states left over from an abnormal
// exit to idle (SPEC.md start-up recovery). Only a leader can write; a
// standby's leader does it for the cluster.
func (s *Server) recoverConversations(ctx context.Context) {
	s.convs.Changed = func() {
		if s.browser != nil && s.browser.hub != nil {
			s.browser.hub.BroadcastSnapshot()
		}
	}
	if !s.node.IsLeader() {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if n, err := s.convs.Recover(rctx); err != nil {
		s.log.Warn("could not reset leftover conversation execution states", "error", err)
	} else if n > 0 {
		s.log.Info("conversation execution states reset to idle after an abnormal exit", "count", n)
	}
}

func (s *Server) renewalRoutes() []Route {
	set := func(status string) HandlerFn {
		return func(w http.ResponseWriter, r *http.Request) error { return s.handleConvSet(w, r, status) }
	}
	path := "/v1/renewal/conversations/{local_conversation_id}"
	return []Route{
		{Method: http.MethodGet, Path: "/v1/renewal/conversations", Name: "renewal.conversations", Area: "renewal", Scope: ScopeBusiness, Kind: KindRead,
			Query:   []Field{{Name: "limit", Type: "integer", Default: 100, Note: "1 to 1000"}},
			Summary: "Renewal conversations, most recently updated first (fields as in the single read).",
			Handle:  s.handleConvList},
		{Method: http.MethodGet, Path: path, Name: "renewal.conversation", Area: "renewal", Scope: ScopeBusiness, Kind: KindRead,
			Summary: "One conversation: automation_status (manual, auto, paused), pause_reason, last_error, execution_state (idle, instruction_running, renewal_running), consecutive_failure_count, repeated_message_count, repeated_renewal_count, last_non_paused_automation_status, platform, client_id, remote_conversation_id and timestamps. 404 unknown_conversation.",
			Handle:  s.handleConvGet},
		{Method: http.MethodPost, Path: path + "/manual", Name: "renewal.manual", Area: "renewal", Scope: ScopeBusiness, Kind: KindWrite,
			Summary: "Set manual: no automatic generation or advancement. Answers the record; the plugins get a state_snapshot.", Handle: set(raftstore.AutoManual)},
		{Method: http.MethodPost, Path: path + "/auto", Name: "renewal.auto", Area: "renewal", Scope: ScopeBusiness, Kind: KindWrite,
			Summary: "Set auto: the projector and dispatcher may advance it. Answers the record; the plugins get a state_snapshot.", Handle: set(raftstore.AutoAuto)},
		{Method: http.MethodPost, Path: path + "/paused", Name: "renewal.paused", Area: "renewal", Scope: ScopeBusiness, Kind: KindWrite,
			Body:    []Field{{Name: "pause_reason", Type: "string", Note: "at most 1024 bytes"}},
			Summary: "Set paused (optional pause_reason): the record and its jobs are kept, nothing advances. Answers the record; the plugins get a state_snapshot.", Handle: set(raftstore.AutoPaused)},
	}
}

func (s *Server) convID(r *http.Request) (string, error) {
	id := mux.Vars(r)["local_conversation_id"]
	if !renewal.ValidID(id) {
		return "", api.Unprocessable("invalid_local_conversation_id", "local_conversation_id must be 1-128 characters of [A-Za-z0-9._:-]")
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
	all := s.convs.List()
	total := len(all)
	if len(all) > limit {
		all = all[:limit]
	}
	api.WriteOK(w, map[string]any{"conversations": all, "count": len(all), "total": total})
	return nil
}

func (s *Server) handleConvSet(w http.ResponseWriter, r *http.Request, status string) error {
	id, err := s.convID(r)
	if err != nil {
		return err
	}
	var body struct {
		PauseReason string `json:"pause_reason"`
	}
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
