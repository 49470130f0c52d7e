package raftstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// Cluster commands. Members' API addresses live in the FSM (raft only knows
// raft addresses), so a standby can forward to the leader's API and
// /v1/controllers can list every node.
const (
	CmdClusterMember = "cluster.member" // a node joined (or re-announced itself)
	CmdClusterForget = "cluster.forget" // a node was removed
	CmdClusterLeader = "cluster.leader" // a node took leadership
)

// ClusterState is the cluster's membership metadata.
type ClusterState struct {
	// ID names the cluster (clusterid.go): set once, by the first leader.
	ID      string                    `json:"id,omitempty"`
	Members map[string]*ClusterMember `json:"members"`
	Leader  ClusterLeader             `json:"leader"`
}

// ClusterMember is one node's addresses and kind.
type ClusterMember struct {
	NodeID   string    `json:"node_id"`
	APIAddr  string    `json:"api_addr,omitempty"` // empty for a witness
	RaftAddr string    `json:"raft_addr"`
	Kind     string    `json:"kind"` // "node" or "witness"
	Version  string    `json:"version,omitempty"`
	JoinedAt time.Time `json:"joined_at"`
	SeenAt   time.Time `json:"seen_at"`
}

// ClusterLeader is written by each node as it becomes leader.
type ClusterLeader struct {
	NodeID  string    `json:"node_id"`
	APIAddr string    `json:"api_addr"`
	Term    uint64    `json:"term"`
	Since   time.Time `json:"since"`
}

// Member kinds.
const (
	KindNode    = "node"
	KindWitness = "witness"
)

func (c *ClusterState) normalize() {
	if c.Members == nil {
		c.Members = map[string]*ClusterMember{}
	}
}

func applyClusterMember(s *State, c Command) (any, error) {
	var m ClusterMember
	if err := decodePayload(c, &m); err != nil {
		return nil, err
	}
	if err := needID("node_id", m.NodeID); err != nil {
		return nil, err
	}
	if m.Kind != KindNode && m.Kind != KindWitness {
		return nil, fmt.Errorf("member kind %q: want node or witness", m.Kind)
	}
	if old := s.Cluster.Members[m.NodeID]; old != nil && !old.JoinedAt.IsZero() {
		m.JoinedAt = old.JoinedAt
	} else {
		m.JoinedAt = c.At
	}
	m.SeenAt = c.At
	s.Cluster.Members[m.NodeID] = &m
	return nil, nil
}

func applyClusterForget(s *State, c Command) (any, error) {
	var m ClusterMember
	if err := decodePayload(c, &m); err != nil {
		return nil, err
	}
	delete(s.Cluster.Members, m.NodeID)
	return nil, nil
}

func applyClusterLeader(s *State, c Command) (any, error) {
	var l ClusterLeader
	if err := decodePayload(c, &l); err != nil {
		return nil, err
	}
	if err := needID("node_id", l.NodeID); err != nil {
		return nil, err
	}
	l.Since = c.At
	s.Cluster.Leader = l
	return nil, nil
}

// Server is one raft member as GET /v1/cluster shows it.
type Server struct {
	NodeID      string     `json:"node_id"`
	RaftAddr    string     `json:"raft_addr"`
	APIAddr     string     `json:"api_addr,omitempty"`
	Kind        string     `json:"kind"`
	Suffrage    string     `json:"suffrage"`
	Role        string     `json:"role"` // leader, standby or witness
	Self        bool       `json:"self"`
	LastContact *time.Time `json:"last_contact,omitempty"` // this node's last contact with the leader (self only, followers)
	SeenAt      *time.Time `json:"seen_at,omitempty"`
}

// Members lists raft's configuration merged with the FSM's metadata.
func (n *Node) Members() ([]Server, error) {
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return nil, err
	}
	leaderAddr, leaderID := n.raft.LeaderWithID()
	_ = leaderAddr
	meta := map[string]ClusterMember{}
	n.Read(func(s *State) {
		for id, m := range s.Cluster.Members {
			meta[id] = *m
		}
	})
	var out []Server
	for _, sv := range fut.Configuration().Servers {
		id := string(sv.ID)
		m := meta[id]
		kind := m.Kind
		if kind == "" {
			kind = KindNode
		}
		srv := Server{NodeID: id, RaftAddr: string(sv.Address), APIAddr: m.APIAddr, Kind: kind, Suffrage: sv.Suffrage.String(), Self: id == n.cfg.NodeID}
		switch {
		case id == string(leaderID):
			srv.Role = RoleLeader
		case kind == KindWitness:
			srv.Role = KindWitness
		default:
			srv.Role = RoleStandby
		}
		if !m.SeenAt.IsZero() {
			t := m.SeenAt
			srv.SeenAt = &t
		}
		if srv.Self && srv.Role != RoleLeader {
			if t := n.raft.LastContact(); !t.IsZero() {
				t = t.UTC()
				srv.LastContact = &t
			}
		}
		out = append(out, srv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeID < out[j].NodeID })
	return out, nil
}

// ErrNotMember is returned when removing a node the cluster does not have.
var ErrNotMember = errors.New("no such cluster member")

// AddVoter adds (or re-adds at a new address) a voting member and records its
// metadata. It must run on the leader.
func (n *Node) AddVoter(ctx context.Context, m ClusterMember) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return err
	}
	for _, sv := range fut.Configuration().Servers {
		if string(sv.ID) == m.NodeID && string(sv.Address) == m.RaftAddr {
			// Already a member at this address: only refresh the metadata.
			_, err := n.Apply(ctx, CmdClusterMember, m)
			return err
		}
		if string(sv.ID) != m.NodeID && string(sv.Address) == m.RaftAddr {
			return fmt.Errorf("raft address %s already belongs to node %s", m.RaftAddr, sv.ID)
		}
	}
	if err := n.raft.AddVoter(raft.ServerID(m.NodeID), raft.ServerAddress(m.RaftAddr), 0, timeoutOf(ctx, 10*time.Second)).Error(); err != nil {
		return mapLeaderErr(err)
	}
	_, err := n.Apply(ctx, CmdClusterMember, m)
	return err
}

// RemoveServer removes a member from raft and forgets its metadata.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return err
	}
	found := false
	for _, sv := range fut.Configuration().Servers {
		found = found || string(sv.ID) == id
	}
	if !found {
		return ErrNotMember
	}
	if err := n.raft.RemoveServer(raft.ServerID(id), 0, timeoutOf(ctx, 10*time.Second)).Error(); err != nil {
		return mapLeaderErr(err)
	}
	_, err := n.Apply(ctx, CmdClusterForget, ClusterMember{NodeID: id})
	return err
}

// TransferLeadership hands leadership to another voter (the witness does
// this whenever it wins an election).
func (n *Node) TransferLeadership() error { return n.raft.LeadershipTransfer().Error() }

// HandOverTarget is the full node a witness that won an election should hand
// leadership to: a node member other than this one and other than gone (the
// leader this witness last followed, which its election replaced, so most
// likely dead). Raft's own pick (LeadershipTransfer) takes the member with
// the highest match index, which right after an election can be the dead
// one, and a transfer to it only fails after a timeout. "" when none.
func (n *Node) HandOverTarget(gone string) (id, addr string) {
	members, err := n.Members()
	if err != nil {
		return "", ""
	}
	for _, m := range members {
		if m.Kind == KindNode && !m.Self && m.NodeID != gone && m.Suffrage == raft.Voter.String() {
			return m.NodeID, m.RaftAddr
		}
	}
	return "", ""
}

// TransferLeadershipTo hands leadership to the given member.
func (n *Node) TransferLeadershipTo(id, addr string) error {
	return n.raft.LeadershipTransferToServer(raft.ServerID(id), raft.ServerAddress(addr)).Error()
}

// LeaderChanges delivers true when this node becomes leader and false when
// it stops being leader. The channel is raft's own (buffered, lossy when not
// drained): read it continuously.
func (n *Node) LeaderChanges() <-chan bool { return n.raft.LeaderCh() }

// Term is the current raft term.
func (n *Node) Term() uint64 {
	t, _ := strconv.ParseUint(n.raft.Stats()["term"], 10, 64)
	return t
}

// HasPeers reports whether raft's configuration holds any server but this one.
func (n *Node) HasPeers() bool {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return false
	}
	for _, sv := range fut.Configuration().Servers {
		if string(sv.ID) != n.cfg.NodeID {
			return true
		}
	}
	return false
}

// IsMember reports whether this node is in raft's configuration at all.
func (n *Node) IsMember() bool {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return false
	}
	for _, sv := range fut.Configuration().Servers {
		if string(sv.ID) == n.cfg.NodeID {
			return true
		}
	}
	return false
}

// RaftAddr is the address peers reach this node's raft at.
func (n *Node) RaftAddr() string { return string(n.transport.LocalAddr()) }

func timeoutOf(ctx context.Context, d time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl)
	}
	return d
}

func mapLeaderErr(err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
		return ErrNotLeader
	}
	return err
}
