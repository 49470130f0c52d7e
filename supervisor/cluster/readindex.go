package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
)

// ReadIndexPath is the leader's route that answers a read index: the commit
// index as of a moment the leader had just confirmed it still leads.
const ReadIndexPath = "/v1/cluster/read_index"

// ReadIndexAnswer is the data of GET /v1/cluster/read_index.
type ReadIndexAnswer struct {
	// ReadIndex covers every write acknowledged before the call: a node
	// whose FSM has applied it answers a read that includes them all.
	ReadIndex uint64 `json:"read_index"`
	LeaderID  string `json:"leader_id"`
}

// ReadIndex returns an index that covers every write acknowledged before
// the call: this node's own when it leads, else the leader's, asked over
// its API (ReadIndex in etcd's sense: one round trip, no log entry). The
// errors are API errors a read can answer with as they are.
func (c *Cluster) ReadIndex(ctx context.Context) (uint64, error) {
	if c.opts.Node.IsLeader() {
		idx, err := c.opts.Node.ReadIndex(ctx)
		if err == nil || !errors.Is(err, raftstore.ErrNotLeader) {
			return idx, readIndexError(err)
		}
		// Lost the lead meanwhile: ask the new leader.
	}
	id, addr, ok := c.LeaderAPI()
	if !ok {
		return 0, api.Unavailable("no_leader", "this node (%s) knows no leader to confirm a current read with (leader %q); retry shortly, or read with ?stale", c.opts.NodeID, id).
			WithDetails(map[string]any{"leader_id": id, "retry_after_ms": 500})
	}
	// A leader that stops answering (stopped, cut off) ends the wait as
	// soon as this node no longer sees it lead, as for a forward.
	ctx, stop := c.untilLeaderMoves(ctx, id, addr)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, (&url.URL{Scheme: "http", Host: addr, Path: ReadIndexPath}).String(), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(ForwardedByHeader, c.opts.NodeID)
	resp, err := c.reads.Do(req)
	if err != nil {
		return 0, api.Unavailable("leader_unreachable", "asking the leader %s at %s for a read index failed: %v; retry, or read with ?stale", id, addr, err).
			WithDetails(map[string]any{"leader_id": id, "leader_api": addr})
	}
	defer resp.Body.Close()
	var env struct {
		Data  ReadIndexAnswer `json:"data"`
		Error *api.ErrorField `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || resp.StatusCode != http.StatusOK || env.Data.ReadIndex == 0 {
		why := fmt.Sprintf("status %d", resp.StatusCode)
		if env.Error != nil {
			why += ": " + env.Error.Message
		} else if err != nil {
			why += ": " + err.Error()
		}
		return 0, api.Unavailable("leader_unreachable", "the leader %s at %s gave no read index (%s); retry, or read with ?stale", id, addr, why).
			WithDetails(map[string]any{"leader_id": id, "leader_api": addr})
	}
	return env.Data.ReadIndex, nil
}

// readIndexError maps the leader's own ReadIndex failures onto API errors.
func readIndexError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raftstore.ErrNotLeader):
		return api.Unavailable("not_leader", "this node stopped leading while confirming a read; retry")
	default:
		return api.Unavailable("no_leader", "this node could not confirm it still leads: %v; retry, or read with ?stale", err).
			WithDetails(map[string]any{"retry_after_ms": 500})
	}
}
