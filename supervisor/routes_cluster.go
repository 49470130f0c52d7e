package supervisor

import (
	"context"
	"net/http"
	"time"

	"github.com/svcd/svcd/supervisor/cluster"
)

// clusterRoutes wires the HA membership routes (issue 13) to supervisor/cluster.
func (s *Server) clusterRoutes() []Route {
	h := cluster.Handlers{Node: s.node, Decode: s.decode}
	return []Route{
		{Method: http.MethodGet, Path: "/v1/cluster", Name: "cluster.list", Area: "cluster", Scope: ScopeControl, Kind: KindRead,
			Summary: "Raft cluster members as this node sees them: id, raft address, suffrage, role, heartbeat health; this node's role, term and applied index.",
			Handle:  h.List},
		{Method: http.MethodPost, Path: "/v1/cluster/join", Name: "cluster.join", Area: "cluster", Scope: ScopeControl, Kind: KindWrite, Auth: true,
			Body: []Field{
				{Name: "id", Type: "string", Required: true, Note: "the joining node's node_id"},
				{Name: "raft_addr", Type: "string", Required: true, Note: "host:port of its raft transport"},
				{Name: "voter", Type: "boolean", Default: true, Note: "false adds a non-voting member"},
			},
			Summary: "Add a node to the cluster (leader only; a retried join of the same id and address is a no-op).",
			Handle:  h.Join},
		{Method: http.MethodPost, Path: "/v1/cluster/remove", Name: "cluster.remove", Area: "cluster", Scope: ScopeControl, Kind: KindWrite, Auth: true,
			Body:    []Field{{Name: "id", Type: "string", Required: true, Note: "node_id to remove"}},
			Summary: "Remove a node from the cluster (leader only).",
			Handle:  h.Remove},
	}
}

// JoinCluster asks the member at leaderURL to add this node (svcd serve -join).
func (s *Server) JoinCluster(ctx context.Context, leaderURL string) error {
	return cluster.RequestJoin(ctx, leaderURL, s.token, s.cfg.NodeID, s.node.RaftAddr(), 250*time.Millisecond)
}
