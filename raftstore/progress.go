package raftstore

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Progress is what an operator watches about this node's raft beyond its
// role: how far its FSM is behind the commit index it knows (on a standby,
// the leader's, learnt from AppendEntries), when it last heard from the
// leader, when its newest snapshot was taken, and how many leader changes it
// has seen.
type Progress struct {
	CommitIndex   uint64
	AppliedIndex  uint64
	LastContact   time.Time // zero: never (or this node leads)
	LastSnapshot  time.Time // zero: no snapshot yet
	LeaderChanges uint64
}

// Progress reads raft's own numbers (Stats, LastContact, the snapshot
// store); nothing here re-times raft.
func (n *Node) Progress() Progress {
	p := Progress{AppliedIndex: n.AppliedIndex(), LastContact: n.raft.LastContact(), LeaderChanges: n.leaderChanges.Load()}
	if v, err := strconv.ParseUint(n.raft.Stats()["commit_index"], 10, 64); err == nil {
		p.CommitIndex = v
	}
	if metas, err := n.snaps.List(); err == nil && len(metas) > 0 {
		p.LastSnapshot = snapshotTime(metas[0].ID)
	}
	return p
}

// snapshotTime reads the creation time the file snapshot store puts in a
// snapshot's ID ("term-index-unixmillis").
func snapshotTime(id string) time.Time {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(id[i+1:], 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// watchLeaders counts the leader changes this node observes (any node
// becoming leader, or the cluster losing its leader), through a raft
// observer: raft's LeaderCh has a single reader already (the cluster
// package).
func (n *Node) watchLeaders(counter *atomic.Uint64) func() {
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(obs)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				counter.Add(1)
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			n.raft.DeregisterObserver(obs)
			close(done)
		})
	}
}
