package raftstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Member is one server of the raft configuration as this node sees it.
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	Suffrage string `json:"suffrage"` // voter | nonvoter
	Role     string `json:"role"`     // leader | standby
	// LastContact is this node's own time since it heard from the leader
	// (self only; empty on the leader itself). Unreachable says the leader's
	// heartbeats to that member are failing, and since when.
	LastContact      string     `json:"last_contact,omitempty"`
	Unreachable      bool       `json:"unreachable,omitempty"`
	UnreachableSince *time.Time `json:"unreachable_since,omitempty"`
	Self             bool       `json:"self,omitempty"`
}

// ErrUnknownMember is a remove of an id that is not in the configuration.
var ErrUnknownMember = errors.New("no such cluster member")

// Join adds a voter (or a non-voter) to the cluster. It must run on the
// leader; adding a member that is already there with the same address is a
// no-op so a retried join is safe.
func (n *Node) Join(ctx context.Context, id, addr string, voter bool) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return err
	}
	for _, s := range fut.Configuration().Servers {
		if string(s.ID) == id && string(s.Address) == addr && (s.Suffrage == raft.Voter) == voter {
			return nil
		}
	}
	timeout := n.applyTimeout(ctx)
	var f raft.IndexFuture
	if voter {
		f = n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout)
	} else {
		f = n.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout)
	}
	return mapLeaderErr(f.Error())
}

// Remove takes a member out of the configuration (leader only).
func (n *Node) Remove(ctx context.Context, id string) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return err
	}
	found := false
	for _, s := range fut.Configuration().Servers {
		found = found || string(s.ID) == id
	}
	if !found {
		return ErrUnknownMember
	}
	return mapLeaderErr(n.raft.RemoveServer(raft.ServerID(id), 0, n.applyTimeout(ctx)).Error())
}

// TransferLeadership hands leadership to another voter (the witness does this
// whenever it wins an election).
func (n *Node) TransferLeadership() error { return n.raft.LeadershipTransfer().Error() }

// Members lists the configuration with roles and heartbeat health, for
// GET /v1/cluster and /v1/controllers.
func (n *Node) Members() ([]Member, error) {
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return nil, err
	}
	_, leaderID := n.raft.LeaderWithID()
	stats := n.raft.Stats()
	var out []Member
	for _, s := range fut.Configuration().Servers {
		m := Member{ID: string(s.ID), RaftAddr: string(s.Address), Suffrage: "voter", Role: RoleStandby}
		if s.Suffrage != raft.Voter {
			m.Suffrage = "nonvoter"
		}
		if s.ID == leaderID {
			m.Role = RoleLeader
		}
		if string(s.ID) == n.cfg.NodeID {
			m.Self = true
			if m.Role != RoleLeader {
				m.LastContact = stats["last_contact"]
			}
		}
		if since, ok := n.leadership.unreachableSince(string(s.ID)); ok {
			m.Unreachable, m.UnreachableSince = true, &since
		}
		out = append(out, m)
	}
	return out, nil
}

// OnLeadership calls fn(true) when this node becomes leader and fn(false)
// when it stops, starting with the current state. Leader-only workers (the
// scheduler) start and stop on it. The returned function unsubscribes; fn
// runs on one goroutine per subscriber, in order.
func (n *Node) OnLeadership(fn func(leader bool)) (cancel func()) {
	return n.leadership.subscribe(fn, n.IsLeader())
}

func (n *Node) applyTimeout(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl)
	}
	return n.cfg.ApplyTimeout
}

func mapLeaderErr(err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
		return ErrNotLeader
	}
	if err != nil {
		return fmt.Errorf("raft membership change: %w", err)
	}
	return nil
}

// leadership fans raft's NotifyCh out to subscribers and remembers which
// peers the leader's heartbeats are failing to reach.
type leadership struct {
	mu     sync.Mutex
	subs   map[int]chan bool
	next   int
	failed map[string]time.Time
	done   chan struct{}
	once   sync.Once
}

func newLeadership(ch <-chan bool) *leadership {
	l := &leadership{subs: map[int]chan bool{}, failed: map[string]time.Time{}, done: make(chan struct{})}
	go func() {
		for {
			select {
			case v := <-ch:
				l.mu.Lock()
				for _, s := range l.subs {
					select {
					case s <- v:
					default: // a slow subscriber still gets the latest value below
						select {
						case <-s:
						default:
						}
						s <- v
					}
				}
				l.mu.Unlock()
			case <-l.done:
				return
			}
		}
	}()
	return l
}

func (l *leadership) subscribe(fn func(bool), now bool) func() {
	ch := make(chan bool, 1)
	ch <- now
	stop := make(chan struct{})
	l.mu.Lock()
	id := l.next
	l.next++
	l.subs[id] = ch
	l.mu.Unlock()
	go func() {
		for {
			select {
			case v := <-ch:
				fn(v)
			case <-stop:
				return
			case <-l.done:
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.subs, id)
			l.mu.Unlock()
			close(stop)
		})
	}
}

func (l *leadership) observe(o raft.Observation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch d := o.Data.(type) {
	case raft.FailedHeartbeatObservation:
		l.failed[string(d.PeerID)] = d.LastContact
	case raft.ResumedHeartbeatObservation:
		delete(l.failed, string(d.PeerID))
	case raft.LeaderObservation:
		l.failed = map[string]time.Time{}
	}
}

func (l *leadership) unreachableSince(id string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.failed[id]
	return t, ok
}

func (l *leadership) stop() { l.once.Do(func() { close(l.done) }) }

// RaftAddr is the address peers reach this node's raft transport on.
func (n *Node) RaftAddr() string { return string(n.transport.LocalAddr()) }
