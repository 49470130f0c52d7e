package renewal

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/supervisor/instructions"
	"github.com/svcd/svcd/workers/scheduler"
)

// On becoming leader the supervisor returns leftover execution states to
// idle and running jobs to pending; pending and finished jobs stay as they
// are, and a recovered job starts (once) on the next tick.
func TestLeadershipRecovery(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	for _, id := range []string{"running", "pending", "done", "instr"} {
		autoConv(t, r.store, id)
	}
	running, _ := r.createJob(t, "running")
	r.startJob(t, running.ID)
	pending, _ := r.createJob(t, "pending")
	done, _ := r.createJob(t, "done")
	r.startJob(t, done.ID)
	if _, err := r.driver.Deliver(testCtx(t), done.ID); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if err := r.store.SetExecution(ctx, convRef("instr"), raftstore.ExecInstructionRunning); err != nil {
		t.Fatal(err)
	}

	// The order the supervisor uses on leadership.
	if n, err := r.store.Recover(ctx); err != nil || n != 2 {
		t.Fatalf("conversations reset: %d %v, want 2", n, err)
	}
	if n, err := r.store.RecoverJobs(ctx); err != nil || n != 1 {
		t.Fatalf("jobs recovered: %d %v, want 1", n, err)
	}
	for _, c := range r.store.List() {
		if c.ExecutionState != raftstore.ExecIdle {
			t.Fatalf("%s still %s", c.LocalID, c.ExecutionState)
		}
	}
	if got := r.job(t, running.ID); got.Status != raftstore.JobPending || got.Attempts != 1 {
		t.Fatalf("recovered job: %+v", got)
	}
	if got := r.job(t, pending.ID); got.Status != raftstore.JobPending || got.Attempts != 0 {
		t.Fatalf("pending job: %+v", got)
	}
	if got := r.job(t, done.ID); got.Status != raftstore.JobDone {
		t.Fatalf("done job: %+v", got)
	}
	// Nothing left to recover: both are idempotent.
	if n, err := r.store.RecoverJobs(ctx); err != nil || n != 0 {
		t.Fatalf("second recovery: %d %v", n, err)
	}
	// The next tick starts the two pending jobs and projects one each for
	// the two idle conversations without an open job.
	if res := r.tick(t); res.Projected != 2 || res.Dispatched != 4 || res.Done != 4 {
		t.Fatalf("tick after recovery: %+v", res)
	}
	if got := r.job(t, running.ID); got.Status != raftstore.JobDone || got.Attempts != 2 {
		t.Fatalf("recovered job after a tick: %+v", got)
	}
	if got := len(r.store.Jobs("running", 10)); got != 1 {
		t.Fatalf("%d jobs for the recovered conversation, want the one", got)
	}
}

// Before each tick the driver returns jobs orphaned by a dead worker to
// pending — but not a delivery this host is still carrying out, which
// records its own outcome.
func TestTickRecoveryLeavesDeliveriesInFlight(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	autoConv(t, r.store, "orphan")
	autoConv(t, r.store, "inflight")
	orphan, _ := r.createJob(t, "orphan")
	r.startJob(t, orphan.ID)
	inflight, _ := r.createJob(t, "inflight")
	r.startJob(t, inflight.ID)

	r.plugin.gate, r.plugin.inside = make(chan struct{}), make(chan string, 1)
	delivered := make(chan error, 1)
	go func() {
		_, err := r.driver.Deliver(context.Background(), inflight.ID)
		delivered <- err
	}()
	select {
	case <-r.plugin.inside:
	case <-time.After(10 * time.Second):
		t.Fatal("the delivery never reached the plugin")
	}

	// One driver pass with a tick that only looks at the state it is given.
	var seen map[string]string
	r.driver.tick = func(ctx context.Context, host scheduler.Host, now time.Time, _ scheduler.Settings) (scheduler.Result, error) {
		v, err := host.View(ctx, now)
		seen = map[string]string{}
		for _, j := range v.Jobs {
			seen[j.LocalID] = j.Status
		}
		return scheduler.Result{}, err
	}
	r.driver.once(testCtx(t))
	if seen["orphan"] != raftstore.JobPending || seen["inflight"] != raftstore.JobRunning {
		t.Fatalf("jobs the tick saw: %v", seen)
	}
	if c := r.conv(t, "orphan"); c.ExecutionState != raftstore.ExecIdle {
		t.Fatalf("orphan's conversation: %s", c.ExecutionState)
	}
	if c := r.conv(t, "inflight"); c.ExecutionState != raftstore.ExecRenewalRunning {
		t.Fatalf("in-flight conversation: %s", c.ExecutionState)
	}

	close(r.plugin.gate)
	if err := <-delivered; err != nil {
		t.Fatalf("the in-flight delivery could not record its outcome: %v", err)
	}
	if got := r.job(t, inflight.ID); got.Status != raftstore.JobDone || got.Attempts != 1 {
		t.Fatalf("in-flight job: %+v", got)
	}
	if _, last, lastErr := r.driver.Status(); lastErr != "" || last.Dispatched != 0 {
		t.Fatalf("driver status: %+v %q", last, lastErr)
	}
}

func convRef(id string) instructions.ConvRef {
	return instructions.ConvRef{Platform: "platform_a", LocalConversationID: id}
}

// A recovered job whose plugin has not reconnected yet waits instead of
// failing: a failed job would be followed by a new one with a new delivery
// key, and a renewal the crash had already delivered would be typed again.
// Nothing is sent, nothing is counted as a failure, and the job starts
// (once, with its own key) as soon as the plugin is back.
func TestJobWaitsForItsPlugin(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	autoConv(t, r.store, "c1")
	job, _ := r.createJob(t, "c1")
	r.startJob(t, job.ID)
	ctx := testCtx(t)
	if n, err := r.store.RecoverJobs(ctx); err != nil || n != 1 {
		t.Fatalf("jobs recovered: %d %v, want 1", n, err)
	}
	r.plugin.setOffline(true)
	for i := 0; i < 3; i++ {
		if res := r.tick(t); res.Dispatched != 0 || res.Failed != 0 || res.Projected != 0 {
			t.Fatalf("tick %d while the plugin is away: %+v", i, res)
		}
	}
	if got := r.job(t, job.ID); got.Status != raftstore.JobPending || got.Attempts != 1 {
		t.Fatalf("job while the plugin is away: %+v", got)
	}
	if c := r.conv(t, "c1"); c.ConsecutiveFailureCount != 0 || c.AutomationStatus != raftstore.AutoAuto {
		t.Fatalf("conversation while the plugin is away: %+v", c)
	}
	if n := r.plugin.count(); n != 0 {
		t.Fatalf("%d deliveries to a plugin that is away", n)
	}
	if last := r.store.Ticks().LastOutcome; !strings.Contains(last, "1 waiting for their plugin") {
		t.Fatalf("tick outcome %q does not say a job waits", last)
	}

	r.plugin.setOffline(false)
	if res := r.tick(t); res.Dispatched != 1 || res.Done != 1 {
		t.Fatalf("tick after the plugin is back: %+v", res)
	}
	if got := r.job(t, job.ID); got.Status != raftstore.JobDone || got.Attempts != 2 {
		t.Fatalf("job after the plugin is back: %+v", got)
	}
	if n := len(r.store.Jobs("c1", 10)); n != 1 {
		t.Fatalf("%d jobs, want the recovered one only", n)
	}
}
