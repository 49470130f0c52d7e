// Package cluster serves the /v1/cluster routes: the member list, join and
// remove, over the raft node's membership API. The supervisor root only wires
// these handlers into its route table (behind its auth and guard middleware).
package cluster

import (
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
)

// Membership is what the handlers need from the raft node.
type Membership interface {
	Members() ([]raftstore.Member, error)
	Role() raftstore.RoleInfo
	Join(ctx context.Context, id, addr string, voter bool) error
	Remove(ctx context.Context, id string) error
}

// Decoder reads a JSON body with the server's limits (api.DecodeJSON).
type Decoder func(r *http.Request, dst any) error

// Handlers answers the cluster routes.
type Handlers struct {
	Node   Membership
	Decode Decoder
}

// View is the body of GET /v1/cluster.
type View struct {
	Self       string             `json:"self"`
	Role       string             `json:"role"`
	LeaderID   string             `json:"leader_id"`
	LeaderAddr string             `json:"leader_addr"`
	Term       uint64             `json:"term"`
	AppliedIdx uint64             `json:"applied_index"`
	Members    []raftstore.Member `json:"members"`
}

// JoinRequest is the body of POST /v1/cluster/join.
type JoinRequest struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	// Voter defaults to true; a non-voter replicates but never counts.
	Voter *bool `json:"voter"`
}

// RemoveRequest is the body of POST /v1/cluster/remove.
type RemoveRequest struct {
	ID string `json:"id"`
}

var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// List answers the cluster as this node sees it.
func (h Handlers) List(w http.ResponseWriter, r *http.Request) error {
	ms, err := h.Node.Members()
	if err != nil {
		return api.Unavailable("raft_unavailable", "read raft configuration: %v", err)
	}
	role := h.Node.Role()
	api.WriteOK(w, View{Self: role.NodeID, Role: role.Role, LeaderID: role.LeaderID, LeaderAddr: role.LeaderAddr,
		Term: role.Term, AppliedIdx: role.AppliedIdx, Members: ms})
	return nil
}

// Join adds a member; retrying the same join is a no-op.
func (h Handlers) Join(w http.ResponseWriter, r *http.Request) error {
	var req JoinRequest
	if err := h.Decode(r, &req); err != nil {
		return err
	}
	if err := ValidateJoin(req); err != nil {
		return err
	}
	voter := req.Voter == nil || *req.Voter
	if err := h.Node.Join(r.Context(), req.ID, req.RaftAddr, voter); err != nil {
		return h.mapErr(err)
	}
	return h.List(w, r)
}

// Remove takes a member out of the cluster.
func (h Handlers) Remove(w http.ResponseWriter, r *http.Request) error {
	var req RemoveRequest
	if err := h.Decode(r, &req); err != nil {
		return err
	}
	if !nodeIDPattern.MatchString(req.ID) {
		return api.Unprocessable("invalid_id", "field \"id\" must be a node id (letters, digits, . _ -, at most 64)")
	}
	if err := h.Node.Remove(r.Context(), req.ID); err != nil {
		return h.mapErr(err)
	}
	return h.List(w, r)
}

// ValidateJoin checks a join request without touching raft.
func ValidateJoin(req JoinRequest) error {
	if !nodeIDPattern.MatchString(req.ID) {
		return api.Unprocessable("invalid_id", "field \"id\" must be a node id (letters, digits, . _ -, at most 64)")
	}
	host, port, err := net.SplitHostPort(req.RaftAddr)
	if err != nil || host == "" || port == "" || port == "0" || strings.ContainsAny(host, " /") {
		return api.Unprocessable("invalid_raft_addr", "field \"raft_addr\" must be host:port of the joining node's raft transport")
	}
	return nil
}

func (h Handlers) mapErr(err error) error {
	switch {
	case errors.Is(err, raftstore.ErrNotLeader):
		role := h.Node.Role()
		return api.Unavailable("not_leader", "membership changes run on the leader %q at %q", role.LeaderID, role.LeaderAddr).
			WithDetails(map[string]any{"leader_id": role.LeaderID, "leader_addr": role.LeaderAddr})
	case errors.Is(err, raftstore.ErrUnknownMember):
		return api.NotFound("unknown_member", "%v", err)
	default:
		return api.Unavailable("raft_unavailable", "%v", err)
	}
}
