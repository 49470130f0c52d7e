package supervisor

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/reqid"
	"github.com/svcd/svcd/shared/version"
	"github.com/svcd/svcd/supervisor/cluster"
	"github.com/svcd/svcd/supervisor/config"
	"github.com/svcd/svcd/supervisor/openapi"
)

// checkJoinState refuses, before anything else starts, a data dir that
// cannot join: one that bootstrapped a cluster of its own, or holds the
// state of a cluster this node is not a member of.
func checkJoinState(n *raftstore.Node, cfg config.Config) error {
	// A node stopped mid-join holds a term but no configuration: let it finish joining.
	if len(cfg.Join) == 0 || !n.HadState() || !n.HasConfiguration() {
		return nil
	}
	switch {
	case !n.IsMember():
		return errors.New("the data dir " + cfg.DataDir + " holds raft state of a cluster this node (" + cfg.NodeID + ") is not a member of; start it with an empty data dir to join")
	case !n.HasPeers():
		return errors.New("the data dir " + cfg.DataDir + " holds a single-node cluster this node bootstrapped on its own; it cannot join another cluster. Start it with an empty data dir to join, or without -join to keep its own state")
	}
	return nil
}

// startCluster follows leadership and, for a new node started with join,
// joins in the background while the listener already serves (as a standby).
func (s *Server) startCluster() {
	ctx, cancel := context.WithCancel(context.Background())
	s.onClose(func() error { cancel(); return nil })
	s.cluster = cluster.New(cluster.Options{
		Node: s.node, NodeID: s.cfg.NodeID, APIAdvertise: s.cfg.APIAdvertise(), Kind: raftstore.KindNode,
		Version: version.Get().Version, Token: s.token, Log: s.log.Named("cluster"),
		DialForward: s.dialForward(),
	})
	s.serveForwarded()
	go s.cluster.Watch(ctx, func(leader bool) {
		if !leader {
			s.leaderSettled.Store(false)
		}
		for _, fn := range s.leaderHooks {
			fn(leader)
		}
		if leader {
			s.leaderSettled.Store(true)
		}
	})
	go s.catchUp(ctx)
	if len(s.cfg.Join) > 0 && !s.node.IsMember() {
		go func() {
			if err := s.cluster.Join(ctx, s.cfg.Join); err != nil && ctx.Err() == nil {
				s.log.Error("could not join the cluster", "error", err)
			}
		}()
	}
}

// OnLeadership registers fn to run whenever this node gains (true) or loses
// (false) leadership: leader-only work (the scheduler) starts and stops there.
func (s *Server) OnLeadership(fn func(leader bool)) { s.leaderHooks = append(s.leaderHooks, fn) }

func (s *Server) clusterRoutes() []Route {
	changeErrors := openapi.Codes{
		http.StatusUnprocessableEntity: {"invalid_field", "missing_field", "peer_refused"},
		http.StatusConflict:            {"raft_addr_taken"},
		http.StatusNotFound:            {"unknown_member"},
		http.StatusServiceUnavailable:  {"cluster_change_failed", "not_leader", "store_unavailable"},
	}
	return []Route{
		{Method: http.MethodGet, Path: cluster.ReadIndexPath, Name: "cluster.read_index", Area: "cluster", Scope: ScopeControl, Kind: KindDiagnostic,
			Response: cluster.ReadIndexAnswer{}, Errors: openapi.Codes{http.StatusServiceUnavailable: {"not_leader", "no_leader"}},
			Summary: "On the leader: an index covering every write acknowledged before the call (the commit index once it has confirmed it still leads). Standbys ask it before a consistent read; 503 not_leader elsewhere.",
			Handle:  s.handleReadIndex},
		{Method: http.MethodGet, Path: "/v1/cluster", Name: "cluster.list", Area: "cluster", Scope: ScopeControl, Kind: KindRead,
			Response: clusterAnswer{}, Errors: openapi.Codes{http.StatusServiceUnavailable: {"store_unavailable"}},
			Summary: "Cluster members: node_id, raft_addr, api_addr, kind (node or witness), suffrage, role (leader, standby, witness), last_contact, seen_at; plus this node's role, the leader and the applied index, and cluster_id (created once by the cluster's first leader, the same on every node; snapshots carry it).",
			Handle:  s.handleClusterList},
		{Method: http.MethodPost, Path: "/v1/cluster/join", Name: "cluster.join", Area: "cluster", Scope: ScopeControl, Kind: KindWrite, Auth: true,
			Request: cluster.JoinRequest{}, Response: clusterAnswer{}, Errors: changeErrors,
			Body: []Field{
				{Name: "node_id", Type: "string", Required: true},
				{Name: "raft_addr", Type: "string", Required: true, Note: "host:port the node's raft listens on (authenticated with the cluster key)"},
				{Name: "api_addr", Type: "string", Note: "host:port of its API (empty for a witness)"},
				{Name: "kind", Type: "string", Default: "node", Note: "node or witness"},
				{Name: "version", Type: "string"},
			},
			Summary: "Add a node as a voter (run on the leader; a standby forwards it). svcd serve -join and svcd witness call it.",
			Handle:  s.handleClusterJoin},
		{Method: http.MethodPost, Path: "/v1/cluster/remove", Name: "cluster.remove", Area: "cluster", Scope: ScopeControl, Kind: KindWrite, Auth: true,
			Request: removeRequest{}, Response: clusterAnswer{}, Errors: changeErrors,
			Body:    []Field{{Name: "node_id", Type: "string", Required: true}},
			Summary: "Remove a member from the cluster (404 unknown_member).",
			Handle:  s.handleClusterRemove},
	}
}

func (s *Server) handleClusterList(w http.ResponseWriter, r *http.Request) error {
	members, err := s.node.Members()
	if err != nil {
		return api.Unavailable("store_unavailable", "raft configuration unreadable: %v", err)
	}
	api.WriteOK(w, clusterAnswer{ClusterID: s.node.ClusterID(), Members: members, Role: s.roleView(), Self: s.cfg.NodeID})
	return nil
}

// clusterAnswer is GET /v1/cluster's data (and join's and remove's).
// Fields in the order the map it replaced encoded them.
type clusterAnswer struct {
	ClusterID string             `json:"cluster_id,omitempty"`
	Members   []raftstore.Server `json:"members"`
	Role      roleView           `json:"role"`
	Self      string             `json:"self"`
}

func (s *Server) handleClusterJoin(w http.ResponseWriter, r *http.Request) error {
	var q cluster.JoinRequest
	if err := s.decode(r, &q); err != nil {
		return err
	}
	if q.Kind == "" {
		q.Kind = raftstore.KindNode
	}
	switch {
	case !validNodeID(q.NodeID):
		return api.Unprocessable("invalid_field", "node_id must be 1-64 characters of [A-Za-z0-9._-]")
	case !validHostPort(q.RaftAddr):
		return api.Unprocessable("invalid_field", "raft_addr must be host:port")
	case q.APIAddr != "" && !validHostPort(q.APIAddr):
		return api.Unprocessable("invalid_field", "api_addr must be host:port")
	case q.Kind != raftstore.KindNode && q.Kind != raftstore.KindWitness:
		return api.Unprocessable("invalid_field", "kind must be node or witness")
	case q.Kind == raftstore.KindNode && q.APIAddr == "":
		return api.Unprocessable("missing_field", "a node needs api_addr (only a witness has none)")
	}
	if err := s.node.ProbePeer(r.Context(), q.RaftAddr); err != nil {
		return api.Unprocessable("peer_refused", "the joining node at raft_addr %s failed the cluster TLS check: %v", q.RaftAddr, err)
	}
	err := s.node.AddVoter(r.Context(), raftstore.ClusterMember{NodeID: q.NodeID, RaftAddr: q.RaftAddr, APIAddr: q.APIAddr, Kind: q.Kind, Version: q.Version})
	if err != nil {
		return s.clusterError(err)
	}
	reqid.Logger(r.Context(), s.log).Info("node joined", "node_id", q.NodeID, "raft_addr", q.RaftAddr, "kind", q.Kind)
	return s.handleClusterList(w, r)
}

// removeRequest is the body of POST /v1/cluster/remove.
type removeRequest struct {
	NodeID string `json:"node_id"`
}

func (s *Server) handleClusterRemove(w http.ResponseWriter, r *http.Request) error {
	var q removeRequest
	if err := s.decode(r, &q); err != nil {
		return err
	}
	if !validNodeID(q.NodeID) {
		return api.Unprocessable("invalid_field", "node_id must be 1-64 characters of [A-Za-z0-9._-]")
	}
	if err := s.node.RemoveServer(r.Context(), q.NodeID); err != nil {
		return s.clusterError(err)
	}
	reqid.Logger(r.Context(), s.log).Info("node removed", "node_id", q.NodeID)
	return s.handleClusterList(w, r)
}

func (s *Server) clusterError(err error) error {
	switch {
	case errors.Is(err, raftstore.ErrNotMember):
		return api.NotFound("unknown_member", "no cluster member with that node_id; GET /v1/cluster lists them")
	case errors.Is(err, raftstore.ErrNotLeader):
		return api.Unavailable("not_leader", "leadership moved during the change; retry")
	}
	if strings.Contains(err.Error(), "already belongs") {
		return api.Conflict("raft_addr_taken", "%v", err)
	}
	return api.Unavailable("cluster_change_failed", "%v", err)
}

// roleView is /rolez: raft's view plus the leader's API address.
type roleView struct {
	raftstore.RoleInfo
	LeaderAPI string `json:"leader_api,omitempty"`
}

func (s *Server) roleView() roleView {
	v := roleView{RoleInfo: s.node.Role()}
	if s.cluster != nil {
		_, v.LeaderAPI, _ = s.cluster.LeaderAPI()
	}
	return v
}

// leaderOnly answers 503 on a standby for what only the active node serves
// (the browser WebSocket), naming the leader so a client can go there.
func (s *Server) leaderOnly(h HandlerFn) HandlerFn {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.node.IsLeader() {
			return h(w, r)
		}
		v := s.roleView()
		return api.Unavailable("standby", "this node is a standby; connect to the active node %s at %s", v.LeaderID, v.LeaderAPI).
			WithDetails(map[string]any{"leader_id": v.LeaderID, "leader_api": v.LeaderAPI})
	}
}

func validNodeID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func validHostPort(a string) bool {
	i := strings.LastIndex(a, ":")
	return i > 0 && i < len(a)-1 && len(a) <= 260
}
