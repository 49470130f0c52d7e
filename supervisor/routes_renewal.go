package supervisor

import (
	"context"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
	"github.com/svcd/svcd/supervisor/instructions"
	"github.com/svcd/svcd/supervisor/renewal"
)

// renewalSvc is the conversation area, built on first use. Its writes push
// a fresh state_snapshot to every plugin (SPEC.md: after renewal writes).
func (s *Server) renewalSvc() *renewal.Service {
	s.renewOnce.Do(func() {
		s.renew = renewal.New(bridgeHost{s}, func() {
			if s.browser != nil {
				s.browser.hub.BroadcastSnapshot()
			}
		})
	})
	return s.renew
}

// recoverRenewal clears execution_state left over from an abnormal exit
// (SPEC.md "On daemon start"); only the leader writes.
func (s *Server) recoverRenewal(ctx context.Context) {
	if !s.node.IsLeader() {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := s.renewalSvc().Recover(rctx)
	if err != nil {
		s.log.Warn("conversation recovery failed", "error", err)
		return
	}
	if n > 0 {
		s.log.Info("cleared leftover conversation execution state", "conversations", n)
	}
}

// linkConversation records the holder of a conversation the bridge saw.
func (s *Server) linkConversation(ctx context.Context, clientID string, l bridgeproto.ConversationLink) {
	if _, err := s.renewalSvc().Link(ctx, clientID, l); err != nil {
		s.log.Warn("conversation link not stored", "client_id", clientID, "local_conversation_id", l.LocalConversationID, "error", err)
	}
}

const convPath = "/v1/renewal/conversations/{local_conversation_id}"

func (s *Server) renewalRoutes() []Route {
	set := func(status string) HandlerFn {
		return func(w http.ResponseWriter, r *http.Request) error { return s.handleSetAutomation(w, r, status) }
	}
	return []Route{
		{Method: http.MethodGet, Path: "/v1/renewal/conversations", Name: "renewal.conversations", Area: "renewal", Scope: ScopeBusiness, Kind: KindRead,
			Summary: "Every renewal conversation record, by local_conversation_id.",
			Handle: func(w http.ResponseWriter, r *http.Request) error {
				api.WriteOK(w, map[string]any{"conversations": s.renewalSvc().List()})
				return nil
			}},
		{Method: http.MethodGet, Path: convPath, Name: "renewal.conversation", Area: "renewal", Scope: ScopeBusiness, Kind: KindRead,
			Summary: "One conversation: automation_status, pause_reason, last_error, execution_state, consecutive_failure_count, repeated_message_count, repeated_renewal_count, last_non_paused_automation_status.",
			Handle: func(w http.ResponseWriter, r *http.Request) error {
				c, err := s.conversationOf(r)
				if err != nil {
					return err
				}
				api.WriteOK(w, c)
				return nil
			}},
		{Method: http.MethodPost, Path: convPath + "/manual", Name: "renewal.manual", Area: "renewal", Scope: ScopeBusiness, Kind: KindWrite,
			Summary: "Set the conversation manual: no automatic generation or advancement.", Handle: set(raftstore.AutomationManual)},
		{Method: http.MethodPost, Path: convPath + "/auto", Name: "renewal.auto", Area: "renewal", Scope: ScopeBusiness, Kind: KindWrite,
			Summary: "Set the conversation auto: the projector and dispatcher may advance it.", Handle: set(raftstore.AutomationAuto)},
		{Method: http.MethodPost, Path: convPath + "/paused", Name: "renewal.paused", Area: "renewal", Scope: ScopeBusiness, Kind: KindWrite,
			Body:    []Field{{Name: "pause_reason", Type: "string", Note: "why (≤1024 bytes)"}},
			Summary: "Pause the conversation; it and its jobs are kept, nothing advances.", Handle: set(raftstore.AutomationPaused)},
	}
}

// conversationOf reads the record named by the path (404 when unknown).
func (s *Server) conversationOf(r *http.Request) (raftstore.Conversation, error) {
	id := mux.Vars(r)["local_conversation_id"]
	if !bridgeproto.ValidConversationID(id) {
		return raftstore.Conversation{}, api.Unprocessable("invalid_local_conversation_id", "local_conversation_id must be 1-128 bytes of [A-Za-z0-9._:-]")
	}
	c, ok := s.renewalSvc().Get(id)
	if !ok {
		return raftstore.Conversation{}, api.NotFound("conversation_not_found", "no conversation %s (a plugin links it with conversation_link)", id)
	}
	return c, nil
}

type automationRequest struct {
	PauseReason string `json:"pause_reason"`
}

func (s *Server) handleSetAutomation(w http.ResponseWriter, r *http.Request, status string) error {
	var req automationRequest
	if err := s.decode(r, &req); err != nil {
		return err
	}
	if status != raftstore.AutomationPaused && req.PauseReason != "" {
		return api.Unprocessable("invalid_field", "pause_reason is only taken by .../paused")
	}
	if len(req.PauseReason) > maxReasonLen || !utf8.ValidString(req.PauseReason) {
		return api.Unprocessable("invalid_field", "pause_reason must be valid UTF-8 of at most %d bytes", maxReasonLen)
	}
	c, err := s.conversationOf(r)
	if err != nil {
		return err
	}
	out, err := s.renewalSvc().Automate(r.Context(), instructions.ConvRef{Platform: c.Platform, LocalConversationID: c.LocalConversationID, RemoteConversationID: c.RemoteConversationID}, status, req.PauseReason)
	if err != nil {
		return err
	}
	api.WriteOK(w, out)
	return nil
}
