package raftstore

import (
	"strconv"

	"github.com/hashicorp/raft"
)

// Roles as /rolez reports them: the raft leader is the active node.
const (
	RoleLeader  = "leader"
	RoleStandby = "standby"
)

// RoleInfo is this node's view of the cluster.
type RoleInfo struct {
	NodeID     string   `json:"node_id"`
	Role       string   `json:"role"`
	RaftState  string   `json:"raft_state"`
	LeaderID   string   `json:"leader_id"`
	LeaderAddr string   `json:"leader_addr"`
	Term       uint64   `json:"term"`
	LastIndex  uint64   `json:"last_index"`
	AppliedIdx uint64   `json:"applied_index"`
	Voters     []string `json:"voters"`
}

// Role reports this node's role, the leader it knows and raft progress.
func (n *Node) Role() RoleInfo {
	addr, id := n.raft.LeaderWithID()
	state := n.raft.State()
	info := RoleInfo{
		NodeID:     n.cfg.NodeID,
		Role:       RoleStandby,
		RaftState:  state.String(),
		LeaderID:   string(id),
		LeaderAddr: string(addr),
		LastIndex:  n.raft.LastIndex(),
		AppliedIdx: n.AppliedIndex(),
	}
	if state == raft.Leader {
		info.Role = RoleLeader
	}
	if t, err := strconv.ParseUint(n.raft.Stats()["term"], 10, 64); err == nil {
		info.Term = t
	}
	if fut := n.raft.GetConfiguration(); fut.Error() == nil {
		for _, s := range fut.Configuration().Servers {
			info.Voters = append(info.Voters, string(s.ID))
		}
	}
	return info
}

// IsLeader reports whether this node is the active one.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Leader returns the leader's id and address as this node knows them (cheap:
// no stats, no configuration read).
func (n *Node) Leader() (id, addr string) {
	a, i := n.raft.LeaderWithID()
	return string(i), string(a)
}

// AppliedIndex is the raft index of the last entry applied to this node's
// FSM: a write acknowledged by Apply is visible to reads once a node's
// AppliedIndex has reached the index reported with that write, and on the
// node that applied the write it is at least the write's own index as soon
// as the write is acknowledged (fsm.applied; raft's figure may lag it).
func (n *Node) AppliedIndex() uint64 { return max(n.raft.AppliedIndex(), n.fsm.applied.Load()) }
