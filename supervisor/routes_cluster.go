package supervisor

import (
	"crypto/hmac"
	"crypto/sha256"
	"net/http"

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

// raftClusterKey derives the raft handshake key from the shared token, so
// nodes that share the token (as they must, to forward with the caller's
// Authorization) authenticate each other without a second secret. The label
// keeps the derived key useless as a bearer token.
func raftClusterKey(token string) []byte {
	if token == "" {
		return nil
	}
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("svcd raft cluster key v1"))
	return m.Sum(nil)
}
