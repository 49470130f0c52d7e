package raftstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Linearizable reads (issue 33). A read is current when the FSM it is
// answered from has applied every entry committed before the read began.
// The leader knows the commit index but must prove it still leads (a newer
// leader may have committed more); a standby learns the index from the
// leader (ReadIndex, as etcd does it) and waits until it has applied it.

// ErrCatchingUp is WaitApplied giving up: this node's FSM is still behind
// the index it was asked to reach.
var ErrCatchingUp = errors.New("this node's state is still catching up with the leader's")

// readGate makes the leader's first read of a term wait for a barrier:
// until an entry of its own term is applied, a new leader's commit index
// (and FSM) may still lack entries the old leader committed (raft §8).
type readGate struct {
	mu sync.Mutex
	// term is the term whose barrier has been applied here (0: none); read
	// without the lock on the fast path.
	term atomic.Uint64
}

// ReadIndex returns an index that covers every write acknowledged before
// the call, from this node as the leader: it has applied an entry of its
// current term, it has just confirmed with a quorum that it still leads
// (VerifyLeader: one heartbeat round), and the index is its commit index
// from before that confirmation. ErrNotLeader when this node does not lead.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	if n.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	term := n.raft.CurrentTerm()
	if err := n.termBarrier(ctx, term); err != nil {
		return 0, err
	}
	idx := n.raft.CommitIndex()
	if !n.soleVoter() {
		if err := n.verifyLeader(ctx); err != nil {
			return 0, err
		}
	}
	if n.raft.CurrentTerm() != term {
		// Lost and won again in between: the barrier was another term's.
		return 0, ErrNotLeader
	}
	return idx, nil
}

// soleVoter reports whether this node is the only voter of its
// configuration: then no other node can be elected while it leads, and a
// leadership check has nothing to ask (the daemon's default single node).
func (n *Node) soleVoter() bool {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return false
	}
	voters := 0
	self := false
	for _, srv := range fut.Configuration().Servers {
		if srv.Suffrage == raft.Voter {
			voters++
			self = self || srv.ID == raft.ServerID(n.cfg.NodeID)
		}
	}
	return voters == 1 && self
}

// verifyLeader is raft.VerifyLeader. It is bounded without a watch on the
// caller's context: raft answers it once a quorum has, or fails it when the
// leader steps down for want of one (within its lease timeout).
func (n *Node) verifyLeader(context.Context) error {
	if err := n.verifier.verify(func() error { return n.raft.VerifyLeader().Error() }); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return ErrNotLeader
		}
		return fmt.Errorf("confirm leadership: %w", err)
	}
	return nil
}

// termBarrier applies a barrier once per term of leadership; later reads of
// the same term skip it.
func (n *Node) termBarrier(ctx context.Context, term uint64) error {
	if n.reads.term.Load() == term {
		return nil
	}
	n.reads.mu.Lock()
	defer n.reads.mu.Unlock()
	if n.reads.term.Load() == term {
		return nil
	}
	timeout := n.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if err := n.raft.Barrier(timeout).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return ErrNotLeader
		}
		return fmt.Errorf("apply the log before reading: %w", err)
	}
	n.reads.term.Store(term)
	return nil
}

// HasApplied reports whether this node's FSM has applied index (no wait).
func (n *Node) HasApplied(index uint64) bool { return n.fsmThrough(index) }

// WaitApplied blocks until this node's FSM has applied index, or ctx ends
// (ErrCatchingUp). Already there, it returns at once without waiting.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	if n.fsmThrough(index) {
		return nil
	}
	// Applies come in bursts of microseconds: a short poll costs little
	// and needs no hook in the FSM's hot path.
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ErrCatchingUp
		case <-t.C:
			if n.fsmThrough(index) {
				return nil
			}
		}
	}
}

// maxNonCommandGap bounds how many entries past the FSM's last command
// fsmThrough inspects: barriers, no-ops and configuration changes come one
// or two at a time; a longer gap is a backlog to wait for.
const maxNonCommandGap = 16

// fsmThrough reports whether the FSM has applied every command up to index.
// raft's AppliedIndex alone does not say it: raft moves it once it has
// queued entries for the FSM goroutine, which may not have applied them
// yet. The FSM's own index moves only with commands; barriers, no-ops and
// configuration entries never reach it. So: the FSM is through index when
// its own index is there, or when raft has handed it everything up to index
// and no command lies between the FSM's index and index.
func (n *Node) fsmThrough(index uint64) bool {
	own := n.fsm.applied.Load()
	if own >= index || n.readThrough.Load() >= index {
		return true
	}
	if n.raft.AppliedIndex() < index {
		return false
	}
	// Entries up to the last snapshot are in the FSM whatever its own
	// index says: a restored snapshot (at start, or installed from the
	// leader) does not move it.
	from := own + 1
	if snap, err := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64); err == nil && snap+1 > from {
		from = snap + 1
	}
	if from <= index && index-from >= maxNonCommandGap {
		return false
	}
	var l raft.Log
	for i := from; i <= index; i++ {
		if err := n.store.GetLog(i, &l); err != nil {
			if errors.Is(err, raft.ErrLogNotFound) {
				// Compacted: a snapshot holds it, and raft restores a
				// snapshot before it moves AppliedIndex past it.
				continue
			}
			return false
		}
		if l.Type == raft.LogCommand {
			return false
		}
	}
	// Remember it: an idle cluster whose last entry is a barrier would
	// otherwise read the log on every read.
	for {
		cur := n.readThrough.Load()
		if cur >= index || n.readThrough.CompareAndSwap(cur, index) {
			return true
		}
	}
}

// CommitIndex is the commit index this node knows (on a standby, the
// leader's as of its last AppendEntries).
func (n *Node) CommitIndex() uint64 { return n.raft.CommitIndex() }

// LastContact is when this node last heard from the leader (zero: never,
// or this node leads).
func (n *Node) LastContact() time.Time { return n.raft.LastContact() }

// verifier shares leadership checks between concurrent reads: a read joins
// the next check to start (never one already under way, which may predate
// its commit index), so N reads at once cost about two heartbeat rounds,
// not N.
type verifier struct {
	mu      sync.Mutex
	running bool
	next    *verifyRound
}

type verifyRound struct {
	done chan struct{}
	err  error
}

func (v *verifier) verify(check func() error) error {
	v.mu.Lock()
	if v.next == nil {
		v.next = &verifyRound{done: make(chan struct{})}
	}
	r := v.next
	if !v.running {
		v.running, v.next = true, nil
		go v.run(r, check)
	}
	v.mu.Unlock()
	<-r.done
	return r.err
}

// run checks round after round while reads keep joining.
func (v *verifier) run(r *verifyRound, check func() error) {
	for {
		r.err = check()
		close(r.done)
		v.mu.Lock()
		if v.next == nil {
			v.running = false
			v.mu.Unlock()
			return
		}
		r, v.next = v.next, nil
		v.mu.Unlock()
	}
}
