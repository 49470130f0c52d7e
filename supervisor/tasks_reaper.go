package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/svcd/svcd/supervisor/tasks"
)

// peerProcess is the task reaper's Liveness: what node nodeID's process
// answers on GET /health (runner, running_tasks, starting_tasks), asked as
// a forward goes.
func (s *Server) peerProcess(ctx context.Context, nodeID string) (tasks.Process, bool, error) {
	if s.cluster == nil {
		return tasks.Process{}, true, errors.New("this node runs no cluster")
	}
	b, gone, err := s.cluster.GetMember(ctx, nodeID, "/health")
	if err != nil {
		return tasks.Process{}, gone, err
	}
	var env struct {
		Data tasks.Process `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Data.Runner == "" {
		// An older release answers without it: its batches may be alive.
		return tasks.Process{}, false, fmt.Errorf("%s's /health names no runner", nodeID)
	}
	return env.Data, false, nil
}
