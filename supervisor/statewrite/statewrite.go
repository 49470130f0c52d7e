// Package statewrite is the supervisor's one write path into the raft
// store: a command is applied through raft and the store's errors become
// API errors (a refusal by the FSM is 422 command_refused, a standby says
// who leads, anything else is 503). The renewal driver, the scheduler's host
// services and the HTTP routes all write through it, so a refusal looks the
// same wherever it comes from.
package statewrite

import (
	"context"
	"errors"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
)

// Writer applies commands to Node and reads its state.
type Writer struct{ Node *raftstore.Node }

// Apply writes one command through raft and maps store errors onto API errors.
func (w Writer) Apply(ctx context.Context, typ string, payload any) (any, error) {
	v, err := w.Node.Apply(ctx, typ, payload)
	if err == nil {
		return v, nil
	}
	var ce *raftstore.CommandError
	switch {
	case errors.As(err, &ce):
		return nil, api.Unprocessable("command_refused", "%v", ce.Err)
	case errors.Is(err, raftstore.ErrNotLeader):
		role := w.Node.Role()
		return nil, api.Unavailable("not_leader", "this node is %s; the leader is %q at %q", role.Role, role.LeaderID, role.LeaderAddr).
			WithDetails(map[string]any{"leader_id": role.LeaderID, "leader_addr": role.LeaderAddr})
	default:
		return nil, api.Unavailable("store_unavailable", "the durable store did not commit the write: %v", err)
	}
}

// Read runs fn on the current state (see raftstore.Node.Read).
func (w Writer) Read(fn func(*raftstore.State)) { w.Node.Read(fn) }
