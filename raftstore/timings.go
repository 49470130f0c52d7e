package raftstore

import (
	"time"

	"github.com/hashicorp/raft"
)

// Timings are the raft timings a node runs with. The library's defaults (1 s
// heartbeat and election timeouts) give 2–3 s elections; a daemon on a local
// network wants a new leader serving within a second, so DefaultTimings are
// tighter. Zero fields take DefaultTimings' values.
type Timings struct {
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	SnapshotInterval   time.Duration
	SnapshotThreshold  uint64 // log entries between snapshots
	TrailingLogs       uint64 // entries kept after a snapshot, for slow followers
}

// DefaultTimings are tuned for nodes on one host or one LAN.
func DefaultTimings() Timings {
	return Timings{
		HeartbeatTimeout:   300 * time.Millisecond,
		ElectionTimeout:    300 * time.Millisecond,
		LeaderLeaseTimeout: 150 * time.Millisecond,
		CommitTimeout:      5 * time.Millisecond,
		// How often raft checks whether SnapshotThreshold entries piled up
		// since the last snapshot. The check is an index comparison; at 30 s
		// a burst of writes left up to 30–60 s of entries to replay at the
		// next start (issue 24, S1), at 5 s it is the threshold plus ~5 s.
		SnapshotInterval:  5 * time.Second,
		SnapshotThreshold: 2048,
		TrailingLogs:      1024,
	}
}

// LibraryTimings are hashicorp/raft's own defaults (the failover benchmark's
// baseline).
func LibraryTimings() Timings {
	d := raft.DefaultConfig()
	return Timings{
		HeartbeatTimeout: d.HeartbeatTimeout, ElectionTimeout: d.ElectionTimeout, LeaderLeaseTimeout: d.LeaderLeaseTimeout,
		CommitTimeout: d.CommitTimeout, SnapshotInterval: d.SnapshotInterval, SnapshotThreshold: d.SnapshotThreshold, TrailingLogs: d.TrailingLogs,
	}
}

func (t Timings) withDefaults() Timings {
	d := DefaultTimings()
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&t.HeartbeatTimeout, d.HeartbeatTimeout)
	set(&t.ElectionTimeout, d.ElectionTimeout)
	set(&t.LeaderLeaseTimeout, d.LeaderLeaseTimeout)
	set(&t.CommitTimeout, d.CommitTimeout)
	set(&t.SnapshotInterval, d.SnapshotInterval)
	if t.SnapshotThreshold == 0 {
		t.SnapshotThreshold = d.SnapshotThreshold
	}
	if t.TrailingLogs == 0 {
		t.TrailingLogs = d.TrailingLogs
	}
	// raft refuses a lease longer than the heartbeat timeout.
	if t.LeaderLeaseTimeout > t.HeartbeatTimeout {
		t.LeaderLeaseTimeout = t.HeartbeatTimeout
	}
	return t
}

func (t Timings) raftConfig() *raft.Config {
	t = t.withDefaults()
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout = t.HeartbeatTimeout
	rc.ElectionTimeout = t.ElectionTimeout
	rc.LeaderLeaseTimeout = t.LeaderLeaseTimeout
	rc.CommitTimeout = t.CommitTimeout
	rc.SnapshotInterval = t.SnapshotInterval
	rc.SnapshotThreshold = t.SnapshotThreshold
	rc.TrailingLogs = t.TrailingLogs
	// Only the labelled replication series: the legacy ones put the peer's
	// node id in the metric name.
	rc.NoLegacyTelemetry = true
	return rc
}

// WitnessTimings are a witness's timings derived from the nodes' t: half the
// heartbeat timeout and the same election timeout. With pre-vote, a voter
// that still hears from a leader refuses a candidate, so of two survivors
// the one that notices the loss *second* wins the election: the witness
// noticing first (its pre-vote refused by the node still following the dead
// leader) retries one election timeout later, after the full node's own
// timeout has usually made it win. When the witness holds the longest log
// the full node cannot win (the witness refuses a candidate whose log is
// behind its own) and the witness's retry is what ends the outage: with
// three times the election timeout that took 0.9-1.8 s (issue 33: P9witness
// max 2.0 s), with the same timeout 0.3-0.6 s, then the hand-over. A witness
// that times out while the leader lives is harmless: the nodes refuse its
// pre-vote and the leader's next heartbeat makes it a follower.
func WitnessTimings(t Timings) Timings {
	t = t.withDefaults()
	t.HeartbeatTimeout /= 2
	return t
}
