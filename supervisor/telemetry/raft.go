package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcd/svcd/raftstore"
)

// RaftProgress exposes what raft's own go-metrics do not: a standby's lag
// behind the commit index it learnt from the leader, time since it last
// heard from the leader, the newest snapshot's age and the leader changes
// this node observed. All read from raft on each scrape (raftstore.Progress).
type RaftProgress struct {
	Read     func() raftstore.Progress
	IsLeader func() bool
}

var (
	commitLagDesc   = prometheus.NewDesc("svcd_raft_commit_lag_entries", "Committed raft entries not yet applied to this node's FSM (on a standby: behind the leader's commit index).", nil, nil)
	contactAgeDesc  = prometheus.NewDesc("svcd_raft_last_contact_age_seconds", "Seconds since this standby last heard from the leader (0 on the leader).", nil, nil)
	snapshotAgeDesc = prometheus.NewDesc("svcd_raft_snapshot_age_seconds", "Age of this node's newest raft snapshot (absent before the first).", nil, nil)
	leaderChgDesc   = prometheus.NewDesc("svcd_raft_leader_changes_total", "Leader changes this node observed (a new leader, or the cluster losing its leader).", nil, nil)
)

// Describe implements prometheus.Collector.
func (c RaftProgress) Describe(ch chan<- *prometheus.Desc) {
	ch <- commitLagDesc
	ch <- contactAgeDesc
	ch <- snapshotAgeDesc
	ch <- leaderChgDesc
}

// Collect implements prometheus.Collector.
func (c RaftProgress) Collect(ch chan<- prometheus.Metric) {
	p := c.Read()
	lag := 0.0
	if p.CommitIndex > p.AppliedIndex {
		lag = float64(p.CommitIndex - p.AppliedIndex)
	}
	ch <- prometheus.MustNewConstMetric(commitLagDesc, prometheus.GaugeValue, lag)
	age := 0.0
	if !c.IsLeader() && !p.LastContact.IsZero() {
		age = time.Since(p.LastContact).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(contactAgeDesc, prometheus.GaugeValue, age)
	if !p.LastSnapshot.IsZero() {
		ch <- prometheus.MustNewConstMetric(snapshotAgeDesc, prometheus.GaugeValue, time.Since(p.LastSnapshot).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(leaderChgDesc, prometheus.CounterValue, float64(p.LeaderChanges))
}
