// Package tasks records units of work (instruction batches, renewals) as
// durable tasks with one run and a bounded log, and keeps the controller
// registry (each supervisor's periodic heartbeat). Writes go through raft.
package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/supervisor/instructions"
)

// Store is the supervisor's one write path and its FSM reads.
type Store interface {
	Apply(ctx context.Context, typ string, payload any) (any, error)
	Read(fn func(s *raftstore.State))
}

// Service is the task area. It satisfies instructions.TaskRecorder.
type Service struct {
	st  Store
	log hclog.Logger
}

// New builds the service.
func New(st Store, log hclog.Logger) *Service { return &Service{st: st, log: log} }

var _ instructions.TaskRecorder = (*Service)(nil)

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Start creates a running task of kind with its run.
func (s *Service) Start(ctx context.Context, kind, title string) (taskID, runID string, err error) {
	taskID, runID = newID("task_"), newID("run_")
	if _, err := s.st.Apply(ctx, raftstore.CmdTaskStart, raftstore.TaskStart{TaskID: taskID, RunID: runID, Kind: kind, Title: title}); err != nil {
		return "", "", err
	}
	return taskID, runID, nil
}

// Log appends one line to the run's log (beyond the bound it is counted,
// not kept). A failed write is logged, not returned: logging never stops
// the work it describes.
func (s *Service) Log(ctx context.Context, taskID, runID, line string) {
	if _, err := s.st.Apply(ctx, raftstore.CmdTaskLog, raftstore.TaskLogLine{TaskID: taskID, RunID: runID, Line: line}); err != nil {
		s.log.Warn("task log line not stored", "task_id", taskID, "error", err)
	}
}

// Finish ends the run with status (succeeded, failed, partially_failed …).
func (s *Service) Finish(ctx context.Context, taskID, runID, status, summary string) {
	if _, err := s.st.Apply(ctx, raftstore.CmdTaskFinish, raftstore.TaskFinish{TaskID: taskID, RunID: runID, Status: status, Summary: summary}); err != nil {
		s.log.Warn("task finish not stored", "task_id", taskID, "error", err)
	}
}

// Recover marks tasks left running by an abnormal exit as interrupted and
// answers how many.
func (s *Service) Recover(ctx context.Context) (int, error) {
	v, err := s.st.Apply(ctx, raftstore.CmdTaskRecover, struct{}{})
	n, _ := v.(int)
	return n, err
}

// List answers up to limit tasks, newest first (all when limit ≤ 0).
func (s *Service) List(limit int) []raftstore.Task {
	var out []raftstore.Task
	s.st.Read(func(st *raftstore.State) { out = st.Tasks.Newest(limit) })
	return out
}

// Get reads one task.
func (s *Service) Get(id string) (raftstore.Task, bool) {
	var out raftstore.Task
	var ok bool
	s.st.Read(func(st *raftstore.State) {
		if t := st.Tasks.ByID[id]; t != nil {
			out, ok = t.Clone(), true
		}
	})
	return out, ok
}

// Controllers lists the registered controllers.
func (s *Service) Controllers() []raftstore.Controller {
	var out []raftstore.Controller
	s.st.Read(func(st *raftstore.State) { out = st.Controllers.Sorted() })
	return out
}

// Heartbeat writes self's registration with a fresh heartbeat.
func (s *Service) Heartbeat(ctx context.Context, self raftstore.Controller) error {
	_, err := s.st.Apply(ctx, raftstore.CmdControllerHeartbeat, self)
	return err
}

// RunHeartbeats writes self() every interval until ctx ends. Only a
// leader can commit; followers' writes fail quietly until forwarding exists.
func (s *Service) RunHeartbeats(ctx context.Context, interval time.Duration, self func() (raftstore.Controller, bool)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if c, ok := self(); ok {
			hctx, cancel := context.WithTimeout(ctx, interval)
			if err := s.Heartbeat(hctx, c); err != nil && ctx.Err() == nil {
				s.log.Debug("controller heartbeat not written", "error", err)
			}
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
