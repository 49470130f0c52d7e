package agentd

import (
	"context"
	"sort"
	"time"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/workers/agentd/codexrpc"
)

// CreateRequest is the body of POST /v1/agentd/sessions. With a known
// sessionId it resumes that session instead of creating one.
type CreateRequest struct {
	SessionID string `json:"sessionId,omitempty"`
	Cwd       string `json:"cwd"`
	Purpose   string `json:"purpose"`
}

// TurnRequest is the body of POST /v1/agentd/turn. WaitMS > 0 waits (bounded
// by the configured maximum) for the turn to finish before answering.
type TurnRequest struct {
	SessionID string `json:"sessionId"`
	Input     string `json:"input"`
	WaitMS    int    `json:"waitMs,omitempty"`
}

// Session returns a copy of one session.
func (d *Daemon) Session(id string) (Session, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.sessions[id]
	if s == nil {
		return Session{}, api.NotFound("unknown_session", "no agent session %q", id)
	}
	return s.clone(), nil
}

// Sessions lists sessions, newest first.
func (d *Daemon) Sessions() []Session {
	d.mu.Lock()
	out := make([]Session, 0, len(d.sessions))
	for _, s := range d.sessions {
		out = append(out, s.clone())
	}
	d.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out
}

func (d *Daemon) currentChild() (*codexrpc.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.child == nil {
		return nil, d.errChildLocked()
	}
	return d.child, nil
}

// Create starts a session (a Codex thread in cwd), or resumes a known one.
func (d *Daemon) Create(ctx context.Context, req CreateRequest) (Session, bool, error) {
	if req.SessionID != "" {
		s, err := d.Session(req.SessionID)
		if err != nil {
			return Session{}, false, err
		}
		_, err = d.ensureThread(ctx, req.SessionID)
		if err != nil {
			return Session{}, false, err
		}
		s, err = d.Session(req.SessionID)
		return s, true, err
	}
	if req.Cwd == "" {
		return Session{}, false, api.Unprocessable("missing_field", "field \"cwd\" is required: the directory the agent works in")
	}
	c, err := d.currentChild()
	if err != nil {
		return Session{}, false, err
	}
	th, err := c.StartThread(ctx, req.Cwd)
	if err != nil {
		return Session{}, false, api.NewError(502, "agent_child_error", "thread/start failed: %v", err)
	}
	now := time.Now().UTC()
	s := &Session{SessionID: newID("ses_"), Cwd: req.Cwd, Purpose: req.Purpose, Status: "idle",
		ThreadID: th.ID, CreatedAt: now, UpdatedAt: now, RecentEvents: []Event{}}
	s.addEvent(Event{Type: "agentd/session_created", SessionID: s.SessionID, At: now})
	d.mu.Lock()
	d.sessions[s.SessionID] = s
	d.byThread[th.ID] = s.SessionID
	d.loaded[th.ID] = true
	_ = d.saveLocked()
	out := s.clone()
	d.mu.Unlock()
	d.publish(Event{Type: "agentd/session_created", SessionID: s.SessionID})
	return out, false, nil
}

// ensureThread makes the session's thread loaded in the current child:
// resumed, or started anew when Codex cannot resume it.
func (d *Daemon) ensureThread(ctx context.Context, id string) (*codexrpc.Client, error) {
	c, err := d.currentChild()
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	s := d.sessions[id]
	threadID, cwd, loaded := s.ThreadID, s.Cwd, d.loaded[s.ThreadID]
	d.mu.Unlock()
	if loaded {
		return c, nil
	}
	if _, err := c.ResumeThread(ctx, threadID, cwd); err == nil {
		d.mu.Lock()
		d.loaded[threadID] = true
		d.mu.Unlock()
		return c, nil
	}
	th, err := c.StartThread(ctx, cwd)
	if err != nil {
		return nil, api.NewError(502, "agent_child_error", "thread/resume and thread/start failed: %v", err)
	}
	d.mu.Lock()
	delete(d.byThread, threadID)
	s.ThreadID = th.ID
	d.byThread[th.ID] = id
	d.loaded[th.ID] = true
	s.addEvent(Event{Type: "agentd/thread_replaced", SessionID: id, Message: "the old thread could not be resumed", At: time.Now().UTC()})
	_ = d.saveLocked()
	d.mu.Unlock()
	return c, nil
}

// Turn starts a turn and returns as soon as Codex accepted it, or, with
// WaitMS, when it finished or the wait ran out.
func (d *Daemon) Turn(ctx context.Context, req TurnRequest) (Session, error) {
	if req.SessionID == "" {
		return Session{}, api.Unprocessable("missing_field", "field \"sessionId\" is required")
	}
	if req.Input == "" {
		return Session{}, api.Unprocessable("missing_field", "field \"input\" is required: the text of the turn")
	}
	if req.WaitMS < 0 {
		return Session{}, api.Unprocessable("invalid_field", "field \"waitMs\" must not be negative")
	}
	if _, err := d.Session(req.SessionID); err != nil {
		return Session{}, err
	}
	c, err := d.ensureThread(ctx, req.SessionID)
	if err != nil {
		return Session{}, err
	}
	d.mu.Lock()
	s := d.sessions[req.SessionID]
	if s.Status == "running" {
		d.mu.Unlock()
		return Session{}, api.Conflict("turn_running", "session %s already runs turn %s; wait for it or interrupt it", s.SessionID, s.LastTurnID)
	}
	now := time.Now().UTC()
	s.Status, s.LastTurnID, s.LastTurnStatus = "running", "", "running"
	s.LastTurnInput, s.LastTurnOutput, s.LastTurnError = req.Input, "", ""
	s.LastTurnStarted, s.LastTurnFinished, s.UpdatedAt = now, time.Time{}, now
	done := make(chan struct{})
	d.waiters[s.SessionID] = append(d.waiters[s.SessionID], done)
	threadID := s.ThreadID
	d.mu.Unlock()

	// Once sent, the turn runs whatever the caller does: a caller that goes
	// away must not turn an accepted turn into a failed one.
	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	turn, err := c.StartTurn(startCtx, threadID, req.Input)
	cancel()
	d.mu.Lock()
	if err != nil {
		if s.Status == "running" {
			d.finishTurnLocked(s, "failed", "turn/start failed: "+err.Error())
		}
		_ = d.saveLocked()
		d.mu.Unlock()
		return Session{}, api.NewError(502, "agent_child_error", "turn/start failed: %v", err)
	}
	if s.LastTurnID == "" {
		s.LastTurnID = turn.ID
	}
	s.addEvent(Event{Type: "agentd/turn_accepted", SessionID: s.SessionID, TurnID: turn.ID, At: time.Now().UTC()})
	_ = d.saveLocked()
	d.mu.Unlock()
	d.publish(Event{Type: "agentd/turn_accepted", SessionID: s.SessionID, TurnID: turn.ID})
	if req.WaitMS > 0 {
		wait := min(time.Duration(req.WaitMS)*time.Millisecond, d.cfg.MaxWait)
		select {
		case <-done:
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	return d.Session(req.SessionID)
}

// Interrupt asks Codex to stop the session's running turn.
func (d *Daemon) Interrupt(ctx context.Context, id string) error {
	s, err := d.Session(id)
	if err != nil {
		return err
	}
	if s.Status != "running" || s.LastTurnID == "" {
		return api.Conflict("no_running_turn", "session %s runs no turn", id)
	}
	c, err := d.currentChild()
	if err != nil {
		return err
	}
	if err := c.InterruptTurn(ctx, s.ThreadID, s.LastTurnID); err != nil {
		return api.NewError(502, "agent_child_error", "turn/interrupt failed: %v", err)
	}
	return nil
}

// Status is GET /v1/agentd/status.
func (d *Daemon) Status() map[string]any {
	d.mu.Lock()
	child := d.childSt
	running := 0
	for _, s := range d.sessions {
		if s.Status == "running" {
			running++
		}
	}
	n := len(d.sessions)
	d.mu.Unlock()
	return map[string]any{
		"daemon":       map[string]any{"listen": d.cfg.Listen, "started": d.started.UTC(), "approvalPolicy": d.cfg.ApprovalPolicy},
		"child":        child,
		"sessions":     map[string]any{"total": n, "running": running},
		"recentEvents": d.hub.recent(),
	}
}
