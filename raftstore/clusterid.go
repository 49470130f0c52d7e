package raftstore

import (
	"context"
	"encoding/json"
	"fmt"
)

// CmdClusterID records the cluster's id in the replicated state. The first
// leader proposes the id of its own data dir (FORMAT's cluster_id, made
// when the dir was created) and the first id applied stays: every node of
// the cluster, and every snapshot taken on any of them, carries the same id.
// A data dir from before this command gets its id the same way, on its
// first start as leader.
const CmdClusterID = "cluster.id"

// ClusterIDRecord is CmdClusterID's payload.
type ClusterIDRecord struct {
	ID string `json:"id"`
}

func applyClusterID(s *State, c Command) (any, error) {
	var r ClusterIDRecord
	if err := decodePayload(c, &r); err != nil {
		return nil, err
	}
	if err := needID("id", r.ID); err != nil {
		return nil, err
	}
	if s.Cluster.ID == "" {
		s.Cluster.ID = r.ID
	}
	return s.Cluster.ID, nil
}

// ClusterID is the cluster's id: the replicated one once a leader recorded
// it, else this data dir's own (FORMAT), which is what this node will
// propose when it leads.
func (n *Node) ClusterID() string {
	var id string
	n.Read(func(s *State) { id = s.Cluster.ID })
	if id == "" {
		id = n.format.ClusterID
	}
	return id
}

// ReplicatedClusterID is the cluster id in the raft state ("" until a
// leader recorded one).
func (n *Node) ReplicatedClusterID() string {
	var id string
	n.Read(func(s *State) { id = s.Cluster.ID })
	return id
}

// EnsureClusterID records the cluster id when the state has none yet and
// returns the cluster's id (leader only; a read once set). The leadership
// announcement calls it, and a restore compares against its answer.
func (n *Node) EnsureClusterID(ctx context.Context) (string, error) {
	if id := n.ReplicatedClusterID(); id != "" {
		return id, nil
	}
	// A leader that just started may not have applied its log yet: the id
	// may be there, only not applied. The first id applied wins anyway, so
	// this only saves a proposal.
	if err := n.Barrier(ctx); err != nil {
		return "", err
	}
	if id := n.ReplicatedClusterID(); id != "" {
		return id, nil
	}
	if n.format.ClusterID == "" {
		return "", fmt.Errorf("data dir %s has no cluster id in its FORMAT file", n.cfg.DataDir)
	}
	v, err := n.Apply(ctx, CmdClusterID, ClusterIDRecord{ID: n.format.ClusterID})
	if err != nil {
		return "", err
	}
	id, _ := v.(string)
	return id, nil
}

// withClusterID returns a state payload whose cluster id is id: a restored
// snapshot keeps the identity of the cluster it is restored into (a forced
// restore of another cluster's snapshot does not make this cluster that
// one), and a snapshot from before the id was replicated gets it. Only the
// cluster object's id member changes; everything else is passed as it was.
func withClusterID(payload []byte, id string) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(payload, &top); err != nil {
		return nil, fmt.Errorf("snapshot payload is not svcd state: %v", err)
	}
	cl := map[string]json.RawMessage{}
	if raw, ok := top["cluster"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &cl); err != nil {
			return nil, fmt.Errorf("snapshot payload's cluster is not an object: %v", err)
		}
	}
	b, _ := json.Marshal(id)
	cl["id"] = b
	raw, err := json.Marshal(cl)
	if err != nil {
		return nil, err
	}
	top["cluster"] = raw
	return json.Marshal(top)
}
