package raftstore

import (
	"fmt"
	"sort"
)

// TaskRecover is the payload of CmdTaskRecover: every running task whose
// runner is not in Live is ended failed with error_code node_lost. Live
// holds the runners known to be alive (the new leader's own process), so a
// batch still running there is not touched. It answers the ids it ended,
// in start order.
type TaskRecover struct {
	Live []string `json:"live"`
}

func applyTaskRecover(s *State, c Command) (any, error) {
	var p TaskRecover
	if err := decodePayload(c, &p); err != nil {
		return nil, err
	}
	if len(p.Live) == 0 {
		// An empty list would end every running task, the caller's own
		// included: refuse rather than guess.
		return nil, fmt.Errorf("task recovery needs the live runners")
	}
	live := map[string]bool{}
	for _, r := range p.Live {
		live[r] = true
	}
	ended := []string{}
	for _, t := range s.Tasks.ByID {
		if t.Status != TaskRunning || live[t.Runner] {
			continue
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
	if len(ended) > 0 {
		s.Tasks.compact()
	}
	return ended, nil
}
