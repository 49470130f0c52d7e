package scheduler

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Engine is the scheduler's logic. It is stateless: a restarted worker
// continues where the durable records say.
type Engine struct{}

// Tick implements Scheduler: skip everything while the system is paused
// (recorded as skipped_system_paused); start nothing new while draining;
// otherwise project jobs for quiet auto conversations and dispatch the due
// ones of auto conversations only.
func (Engine) Tick(ctx context.Context, host Host, now time.Time, s Settings) (Result, error) {
	var res Result
	view, err := host.View(ctx, now)
	if err != nil {
		return res, fmt.Errorf("read the renewal view: %w", err)
	}
	record := func(skipped bool, outcome string) {
		if _, _, err := host.Apply(ctx, "tick.record", map[string]any{"skipped_system_paused": skipped, "outcome": outcome}); err != nil {
			res.Errors = append(res.Errors, "tick record: "+err.Error())
		}
	}
	switch view.Mode {
	case "paused":
		res.SkippedSystemPaused = true
		record(true, "skipped_system_paused")
		return res, nil
	case "draining":
		record(false, "draining: nothing new starts")
		return res, nil
	}
	open := map[string]bool{}
	for _, j := range view.Jobs {
		open[j.LocalID] = true
	}
	idle := time.Duration(s.IdleAfterMs) * time.Millisecond
	for _, c := range view.Conversations {
		if c.AutomationStatus != "auto" || !c.Linked || open[c.LocalID] || c.ExecutionState != "idle" || c.LastActivityAt.IsZero() {
			continue
		}
		if now.Sub(c.LastActivityAt) < idle {
			continue
		}
		_, refused, err := host.Apply(ctx, "job.create", map[string]any{"local_conversation_id": c.LocalID, "message": s.Message, "due_at": now.UTC()})
		switch {
		case err != nil:
			res.Errors = append(res.Errors, c.LocalID+": "+err.Error())
		case !refused:
			res.Projected++
		}
	}
	// Re-read: the jobs just projected are due now.
	if res.Projected > 0 {
		if view, err = host.View(ctx, now); err != nil {
			return res, err
		}
	}
	auto, reachable := map[string]bool{}, map[string]bool{}
	for _, c := range view.Conversations {
		auto[c.LocalID] = c.AutomationStatus == "auto"
		reachable[c.LocalID] = c.Reachable
	}
	due := []Job{}
	waiting := 0 // due, but their plugin is not connected: they stay pending
	for _, j := range view.Jobs {
		if j.Status == "pending" && !j.DueAt.After(now) && auto[j.LocalID] {
			if !reachable[j.LocalID] {
				waiting++
				continue
			}
			due = append(due, j)
		}
	}
	sort.Slice(due, func(a, b int) bool { return due[a].DueAt.Before(due[b].DueAt) })
	for _, j := range due {
		if s.MaxPerTick > 0 && res.Dispatched >= s.MaxPerTick {
			break
		}
		if _, refused, err := host.Apply(ctx, "job.start", map[string]any{"job_id": j.ID}); err != nil || refused {
			if err != nil {
				res.Errors = append(res.Errors, j.ID+": "+err.Error())
			}
			continue // refused: started elsewhere, or no longer auto
		}
		res.Dispatched++
		d, err := host.Deliver(ctx, j.ID)
		switch {
		case err != nil:
			res.Errors = append(res.Errors, j.ID+": "+err.Error())
		case d.OK:
			res.Done++
		default:
			res.Failed++
		}
	}
	outcome := fmt.Sprintf("projected %d, dispatched %d, done %d, failed %d", res.Projected, res.Dispatched, res.Done, res.Failed)
	if waiting > 0 {
		outcome += fmt.Sprintf(", %d waiting for their plugin", waiting)
	}
	record(false, outcome)
	return res, nil
}
