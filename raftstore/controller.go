package raftstore

import (
	"fmt"
	"sort"
	"time"
)

// CmdControllerHeartbeat registers a supervisor (controller) or refreshes
// its heartbeat. Each supervisor writes its own periodically.
const CmdControllerHeartbeat = "controller.heartbeat"

// MaxControllers bounds the registry.
const MaxControllers = 64

// ControllerState holds the registered controllers by node id.
type ControllerState struct {
	ByNode map[string]*Controller `json:"by_node"`
}

// Controller is one registered supervisor.
type Controller struct {
	NodeID        string    `json:"node_id"`
	APIAddr       string    `json:"api_addr"`
	RaftAddr      string    `json:"raft_addr"`
	Role          string    `json:"role"`
	Version       string    `json:"version"`
	StartedAt     time.Time `json:"started_at"`
	LastHeartbeat time.Time `json:"last_heartbeat"`
}

func (c *ControllerState) normalize() {
	if c.ByNode == nil {
		c.ByNode = map[string]*Controller{}
	}
}

// Sorted lists the controllers by node id.
func (c *ControllerState) Sorted() []Controller {
	out := make([]Controller, 0, len(c.ByNode))
	for _, v := range c.ByNode {
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeID < out[j].NodeID })
	return out
}

func applyControllerHeartbeat(s *State, c Command) (any, error) {
	var p Controller
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if p.NodeID == "" {
		return nil, fmt.Errorf("%s: node_id is required", c.Type)
	}
	cur := s.Controllers.ByNode[p.NodeID]
	if cur == nil {
		if len(s.Controllers.ByNode) >= MaxControllers {
			return nil, fmt.Errorf("%s: more than %d controllers", c.Type, MaxControllers)
		}
		cur = &Controller{NodeID: p.NodeID}
		s.Controllers.ByNode[p.NodeID] = cur
	}
	started := cur.StartedAt
	*cur = p
	if !p.StartedAt.IsZero() {
		started = p.StartedAt
	}
	cur.StartedAt, cur.LastHeartbeat = started, c.At
	return *cur, nil
}
