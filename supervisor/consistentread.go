package supervisor

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/supervisor/cluster"
)

// Read modes (docs/ha.md, issue 33). Every GET that answers from the raft
// state is linearizable by default: it reflects every write acknowledged
// before it began, on whichever node it is sent to. ?stale (or the
// X-Svcd-Consistency: stale header) answers from this node's FSM at once,
// with how current it is in headers, as Consul's ?stale does.
const (
	// ConsistencyHeader asks for a read mode by header: "stale" or
	// "consistent" (the default).
	ConsistencyHeader = "X-Svcd-Consistency"
	// KnownLeaderHeader says whether this node knew a leader when it
	// answered a stale read (Consul's X-Consul-KnownLeader).
	KnownLeaderHeader = "X-Svcd-Known-Leader"
	// LastContactHeader is the time in milliseconds since this node last
	// heard from the leader (0 on the leader; Consul's X-Consul-LastContact).
	LastContactHeader = "X-Svcd-Last-Contact"
	// BehindHeader is how many committed entries this node knows of that its
	// FSM has not applied yet: what a stale answer may lack, as far as this
	// node can tell.
	BehindHeader = "X-Svcd-Behind"
)

// readWait bounds how long a consistent read waits for this node's FSM to
// reach the read index before it answers 503 catching_up.
const readWait = time.Second

// readsState reports whether rt answers from the raft state, so that its
// answer must be current: every GET read of the API except discovery and
// the routes that act on this host (Local).
func (rt Route) readsState() bool {
	return rt.Method == http.MethodGet && rt.Kind == KindRead && rt.Scope != ScopeDiscovery && !rt.Local
}

// wantsStale reports whether the caller asked for a stale read.
func wantsStale(r *http.Request) bool {
	if h := r.Header.Get(ConsistencyHeader); h != "" {
		return h == "stale"
	}
	if r.URL.RawQuery == "" {
		return false
	}
	v, ok := r.URL.Query()["stale"]
	if !ok {
		return false
	}
	// ?stale and ?stale=true ask for it; ?stale=false does not.
	return len(v) == 0 || v[0] == "" || v[0] == "true" || v[0] == "1"
}

// consistentRead returns once this node's FSM covers every write
// acknowledged before the call (the leader confirms it leads; a standby asks
// it for its read index), or with the API error to answer instead.
func (s *Server) consistentRead(ctx context.Context) error {
	idx, err := s.cluster.ReadIndex(ctx)
	if err != nil {
		return err
	}
	if err := s.waitApplied(ctx, idx); err != nil {
		if errors.Is(err, raftstore.ErrCatchingUp) {
			applied := s.node.AppliedIndex()
			return api.Unavailable("catching_up", "this node has applied the state up to index %d of %d; it answers once caught up: retry, or read with ?stale", applied, idx).
				WithDetails(map[string]any{"applied_index": applied, "read_index": idx, "retry_after_ms": 1000})
		}
		return err
	}
	if !s.caughtUp.Load() {
		s.caughtUp.Store(true)
	}
	return nil
}

// waitApplied is Node.WaitApplied bounded by readWait; the bound (a timer)
// is set only when the FSM is not there yet.
func (s *Server) waitApplied(ctx context.Context, idx uint64) error {
	if s.node.HasApplied(idx) {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	return s.node.WaitApplied(wctx, idx)
}

// stampStale writes the stale read's headers: whether a leader is known,
// since when this node has not heard from it, and how far behind its FSM is.
func (s *Server) stampStale(w http.ResponseWriter) {
	h := w.Header()
	id, _ := s.node.Leader()
	h.Set(KnownLeaderHeader, strconv.FormatBool(id != ""))
	contact := int64(0)
	if !s.node.IsLeader() {
		contact = -1 // never heard from a leader
		if at := s.node.LastContact(); !at.IsZero() {
			contact = time.Since(at).Milliseconds()
		}
	}
	h.Set(LastContactHeader, strconv.FormatInt(contact, 10))
	commit, applied := s.node.CommitIndex(), s.node.AppliedIndex()
	behind := uint64(0)
	if commit > applied {
		behind = commit - applied
	}
	h.Set(BehindHeader, strconv.FormatUint(behind, 10))
}

// readGate runs before a state-reading route's handler: a stale read gets
// its headers, a consistent one waits until this node is current. A non-nil
// error is the answer.
func (s *Server) readGate(w http.ResponseWriter, r *http.Request) error {
	if wantsStale(r) {
		s.stampStale(w)
		return nil
	}
	if err := s.consistentRead(r.Context()); err != nil {
		var ae *api.Error
		if errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		return err
	}
	return nil
}

// handleReadIndex is GET /v1/cluster/read_index: the leader's read index.
// Only the leader answers one; a standby never asks another standby's
// leader on a caller's behalf (one hop).
func (s *Server) handleReadIndex(w http.ResponseWriter, r *http.Request) error {
	if !s.node.IsLeader() {
		id, _ := s.node.Leader()
		return api.Unavailable("not_leader", "node %s is not the leader (leader %q); ask the leader for a read index", s.cfg.NodeID, id)
	}
	idx, err := s.node.ReadIndex(r.Context())
	if err != nil {
		if errors.Is(err, raftstore.ErrNotLeader) {
			return api.Unavailable("not_leader", "node %s stopped leading while confirming the read index; retry", s.cfg.NodeID)
		}
		return api.Unavailable("no_leader", "node %s could not confirm it leads: %v; retry", s.cfg.NodeID, err)
	}
	api.WriteOK(w, cluster.ReadIndexAnswer{ReadIndex: idx, LeaderID: s.cfg.NodeID})
	return nil
}

// catchUpEvery is how often a node that has not caught up since its start
// tries again.
const catchUpEvery = 100 * time.Millisecond

// catchUp marks this node caught up as soon as it has applied the leader's
// read index as of a moment after its start, without waiting for a caller's
// read to find out (/readyz says catching_up until then).
func (s *Server) catchUp(ctx context.Context) {
	t := time.NewTicker(catchUpEvery)
	defer t.Stop()
	for !s.caughtUp.Load() {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := s.consistentRead(rctx)
		cancel()
		if err == nil {
			s.log.Info("caught up with the leader", "applied_index", s.node.AppliedIndex())
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
