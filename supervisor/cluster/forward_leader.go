package cluster

import (
	"context"
	"fmt"
	"time"
)

// leaderWatchInterval is how often a forward in flight checks who leads.
const leaderWatchInterval = 100 * time.Millisecond

// leaderMoved ends a forward whose leader this node no longer sees lead.
type leaderMoved struct{ id, addr, now string }

func (e *leaderMoved) Error() string {
	return fmt.Sprintf("the leader %s at %s did not answer, and this node no longer sees it lead (%s)", e.id, e.addr, e.now)
}

// untilLeaderMoves is ctx, ended early when this node stops seeing id at
// addr as the leader. A leader cut off by a partition receives the call
// (or not) and never answers: without this the caller waits until its own
// timeout. Once the rest of the cluster elects, or this node stops hearing
// the old leader, the forward ends with 503 leader_unreachable (chaos
// finding 8). stop releases the watch.
func (c *Cluster) untilLeaderMoves(ctx context.Context, id, addr string) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		t := time.NewTicker(leaderWatchInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				nid, naddr, ok := c.LeaderAPI()
				if ok && nid == id && naddr == addr {
					continue
				}
				now := "no leader known"
				if nid != "" {
					now = fmt.Sprintf("leader now %s at %q", nid, naddr)
				}
				cancel(&leaderMoved{id: id, addr: addr, now: now})
				return
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}
