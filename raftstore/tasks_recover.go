package raftstore

import (
	"fmt"
	"slices"
	"sort"
)

// TaskRecover is the payload of CmdTaskRecover: the running tasks it names
// end failed with error_code node_lost, one of two ways:
//
//   - Tasks: exactly these (the leader's reaper found each one's process
//     gone, or no longer running it, or silent for its bound). The
//     conversations whose last running batch this ends return from
//     instruction_running to idle in the same step, so renewal resumes
//     only once the batch that held it is known to be over.
//   - Live (older leaders, still replayed from logs): the tasks of every
//     runner but these. It ended a batch still running on a node that had
//     just lost the lead, and opened its conversation to renewals (chaos,
//     stop 39).
//
// It answers the ids it ended, in start order.
type TaskRecover struct {
	Live  []string `json:"live,omitempty"`
	Tasks []string `json:"tasks,omitempty"`
}

func applyTaskRecover(s *State, c Command) (any, error) {
	var p TaskRecover
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if len(p.Live) == 0 && len(p.Tasks) == 0 {
		// An empty list would end every running task, the caller's own
		// included: refuse rather than guess.
		return nil, fmt.Errorf("task recovery needs the live runners or the tasks to end")
	}
	if len(p.Live) > 0 && len(p.Tasks) > 0 {
		return nil, fmt.Errorf("task recovery takes the live runners or the tasks to end, not both")
	}
	gone := func(t *Task) bool { return !slices.Contains(p.Live, t.Runner) }
	if len(p.Tasks) > 0 {
		gone = func(t *Task) bool { return slices.Contains(p.Tasks, t.ID) }
	}
	ended := []string{}
	convs := map[string]bool{}
	for _, t := range s.Tasks.ByID {
		if t.Status != TaskRunning || !gone(t) {
			continue
		}
		if t.Conversation != "" {
			convs[t.Conversation] = true
		}
		runner := t.Runner
		if runner == "" {
			runner = "an unnamed process"
		}
		line := fmt.Sprintf("interrupted: %s stopped or lost its leadership before this batch finished; node_lost; its blocks are not run again (re-send the message to run them)", runner)
		for i := range t.Runs {
			r := &t.Runs[i]
			if r.FinishedAt != nil {
				continue
			}
			at := c.At
			r.Status, r.FinishedAt, r.Interrupted = TaskFailed, &at, true
			r.Logs = append(r.Logs, LogLine{At: c.At, Line: line})
			if over := len(r.Logs) - MaxRunLogLines; over > 0 {
				r.Logs = append([]LogLine{}, r.Logs[over:]...)
				r.Dropped += over
			}
		}
		at := c.At
		t.Status, t.ErrorCode, t.FinishedAt, t.UpdatedAt = TaskFailed, TaskNodeLost, &at, at
		t.Summary = clipText(TaskNodeLost+": "+runner+" ended before the task's finish was recorded", 4096)
		ended = append(ended, t.ID)
	}
	sort.Slice(ended, func(i, j int) bool { return TaskSeq(ended[i]) < TaskSeq(ended[j]) })
	if len(p.Tasks) > 0 {
		releaseBatches(s, convs, c)
	}
	if len(ended) > 0 {
		s.Tasks.compact()
	}
	return ended, nil
}

// releaseBatches returns each conversation in convs from
// instruction_running to idle unless a batch of it still runs.
func releaseBatches(s *State, convs map[string]bool, c Command) {
	for id := range convs {
		cv := s.Conversations.ByID[id]
		if cv == nil || cv.ExecutionState != ExecInstructionRunning || s.Tasks.batchRunning(id) {
			continue
		}
		cv.ExecutionState = ExecIdle
		s.Conversations.touch(cv, c.At)
	}
}

// batchRunning: some running task belongs to conversation id.
func (t *TasksState) batchRunning(id string) bool {
	for _, x := range t.ByID {
		if x.Status == TaskRunning && x.Conversation == id {
			return true
		}
	}
	return false
}
