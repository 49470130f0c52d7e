package renewal

import (
	"testing"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/workers/scheduler"
)

// System paused: the tick is recorded as skipped_system_paused and nothing
// is projected or started, not even a job already due.
func TestPausedSystemRecordsSkipAndStartsNothing(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	autoConv(t, r.store, "c1")
	autoConv(t, r.store, "c2")
	due, _ := r.createJob(t, "c1")
	r.mode.set(raftstore.ModePaused)
	for i := 1; i <= 2; i++ {
		res := r.tick(t)
		if !res.SkippedSystemPaused || res.Projected != 0 || res.Dispatched != 0 {
			t.Fatalf("paused tick %d: %+v", i, res)
		}
		if ticks := r.store.Ticks(); ticks.Total != int64(i) || ticks.SkippedSystemPaused != int64(i) || ticks.LastSkippedAt.IsZero() {
			t.Fatalf("tick record after %d paused ticks: %+v", i, ticks)
		}
	}
	if got := r.job(t, due.ID); got.Status != raftstore.JobPending {
		t.Fatalf("due job while paused: %+v", got)
	}
	if got := len(r.store.Jobs("c2", 10)); got != 0 || r.plugin.count() != 0 {
		t.Fatalf("paused system: %d jobs projected for c2, %d deliveries", got, r.plugin.count())
	}
	r.mode.set(raftstore.ModeRunning)
	if res := r.tick(t); res.SkippedSystemPaused || res.Dispatched != 2 {
		t.Fatalf("running again: %+v", res)
	}
	if ticks := r.store.Ticks(); ticks.Total != 3 || ticks.SkippedSystemPaused != 2 {
		t.Fatalf("tick record after resuming: %+v", ticks)
	}
}

// Draining: nothing new starts — no projection, no dispatch of due jobs —
// and the tick is not counted as skipped_system_paused.
func TestDrainingStartsNothingNew(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	autoConv(t, r.store, "c1")
	autoConv(t, r.store, "c2")
	due, _ := r.createJob(t, "c1")
	r.mode.set(raftstore.ModeDraining)
	res := r.tick(t)
	if res.SkippedSystemPaused || res.Projected != 0 || res.Dispatched != 0 {
		t.Fatalf("draining tick: %+v", res)
	}
	if got := r.job(t, due.ID); got.Status != raftstore.JobPending {
		t.Fatalf("due job while draining: %+v", got)
	}
	if got := len(r.store.Jobs("c2", 10)); got != 0 || r.plugin.count() != 0 {
		t.Fatalf("draining: %d jobs projected for c2, %d deliveries", got, r.plugin.count())
	}
	if ticks := r.store.Ticks(); ticks.Total != 1 || ticks.SkippedSystemPaused != 0 {
		t.Fatalf("tick record: %+v", ticks)
	}
}

// A due job of a conversation no longer auto is not started.
func TestDueJobOfAPausedConversationWaits(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	autoConv(t, r.store, "c1")
	j, _ := r.createJob(t, "c1")
	if _, err := r.store.SetStatus(testCtx(t), "c1", raftstore.AutoPaused, "by hand"); err != nil {
		t.Fatal(err)
	}
	if res := r.tick(t); res.Dispatched != 0 {
		t.Fatalf("tick: %+v", res)
	}
	if r.startJob(t, j.ID) {
		t.Fatal("the FSM started a job of a paused conversation")
	}
	if got := r.job(t, j.ID); got.Status != raftstore.JobPending || r.plugin.count() != 0 {
		t.Fatalf("job %+v, %d deliveries", got, r.plugin.count())
	}
}
