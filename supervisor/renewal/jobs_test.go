package renewal

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/supervisor/instructions"
	"github.com/svcd/svcd/workers/scheduler"
)

// A conversation has at most one open (pending or running) job; once it
// finished, the next one may be created.
func TestJobCreateRefusesASecondOpenJob(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	autoConv(t, r.store, "c1")
	first, refused := r.createJob(t, "c1")
	if refused || first.Status != raftstore.JobPending {
		t.Fatalf("first job: %+v refused=%v", first, refused)
	}
	if _, refused := r.createJob(t, "c1"); !refused {
		t.Fatal("a second job next to a pending one was accepted")
	}
	if !r.startJob(t, first.ID) {
		t.Fatal("the pending job did not start")
	}
	if _, refused := r.createJob(t, "c1"); !refused {
		t.Fatal("a second job next to a running one was accepted")
	}
	if got := len(r.store.Jobs("c1", 10)); got != 1 {
		t.Fatalf("%d jobs after the refusals, want 1", got)
	}
	if _, err := r.driver.Deliver(testCtx(t), first.ID); err != nil {
		t.Fatal(err)
	}
	if _, refused := r.createJob(t, "c1"); refused {
		t.Fatal("a new job after the first finished was refused")
	}
}

// Jobs are only for auto conversations.
func TestJobCreateRefusedUnlessAuto(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	autoConv(t, r.store, "c1")
	if _, err := r.store.SetStatus(testCtx(t), "c1", raftstore.AutoManual, ""); err != nil {
		t.Fatal(err)
	}
	if _, refused := r.createJob(t, "c1"); !refused {
		t.Fatal("a job for a manual conversation was accepted")
	}
	if _, refused := r.createJob(t, "nobody"); !refused {
		t.Fatal("a job for an unknown conversation was accepted")
	}
	if got := len(r.store.Jobs("", 10)); got != 0 {
		t.Fatalf("%d jobs after refusals, want 0", got)
	}
}

// pending → running is the one guard against running a job twice: of many
// concurrent starts exactly one wins, and a running or finished job never
// starts again.
func TestOnlyAPendingJobStartsOnce(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	autoConv(t, r.store, "c1")
	j, _ := r.createJob(t, "c1")

	const starters = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := 0; i < starters; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.startJob(t, j.ID) {
				mu.Lock()
				won++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d of %d concurrent starts won, want exactly 1", won, starters)
	}
	got := r.job(t, j.ID)
	if got.Status != raftstore.JobRunning || got.Attempts != 1 || got.StartedAt == nil {
		t.Fatalf("job after the starts: %+v", got)
	}
	if c := r.conv(t, "c1"); c.ExecutionState != raftstore.ExecRenewalRunning {
		t.Fatalf("conversation execution_state %q, want renewal_running", c.ExecutionState)
	}
	if r.startJob(t, j.ID) {
		t.Fatal("a running job started again")
	}
	if _, err := r.driver.Deliver(testCtx(t), j.ID); err != nil {
		t.Fatal(err)
	}
	if r.startJob(t, j.ID) {
		t.Fatal("a finished job started again")
	}
	if got := r.job(t, j.ID); got.Status != raftstore.JobDone || got.Attempts != 1 {
		t.Fatalf("finished job changed by a refused start: %+v", got)
	}
	if n := r.plugin.count(); n != 1 {
		t.Fatalf("the plugin typed the message %d times, want 1", n)
	}
}

// The scheduler may write only what it needs; anything else is an error and
// changes nothing.
func TestDriverApplyRefusesOtherCommands(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	autoConv(t, r.store, "c1")
	_, refused, err := r.driver.Apply(testCtx(t), raftstore.CmdConvAutomation, raftstore.ConvAutomation{ConvLink: raftstore.ConvLink{LocalID: "c1"}, Status: raftstore.AutoManual})
	if err == nil || refused || !strings.Contains(err.Error(), "may not write") {
		t.Fatalf("conv.automation through the scheduler: refused=%v err=%v", refused, err)
	}
	if c := r.conv(t, "c1"); c.AutomationStatus != raftstore.AutoAuto {
		t.Fatalf("automation_status %q after the refused write", c.AutomationStatus)
	}
}

// Deliver refuses a job that is not running, without typing anything.
func TestDeliverNeedsARunningJob(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	autoConv(t, r.store, "c1")
	j, _ := r.createJob(t, "c1")
	if _, err := r.driver.Deliver(testCtx(t), j.ID); err == nil {
		t.Fatal("a pending job was delivered")
	}
	if _, err := r.driver.Deliver(testCtx(t), "job-404"); err == nil {
		t.Fatal("an unknown job was delivered")
	}
	if got := r.job(t, j.ID); got.Status != raftstore.JobPending || r.plugin.count() != 0 {
		t.Fatalf("job %+v, %d deliveries", got, r.plugin.count())
	}
}

// A tick over a quiet auto conversation projects one job, starts it, types
// the configured message through the plugin holding the conversation and
// records the acknowledged outcome.
func TestTickProjectsDispatchesAndRecords(t *testing.T) {
	r := newRig(t, scheduler.Settings{Message: "keep going", MaxFailures: 3, MaxRenewals: 5})
	autoConv(t, r.store, "c1")
	autoConv(t, r.store, "c2")
	res := r.tick(t)
	if res.Projected != 2 || res.Dispatched != 2 || res.Done != 2 || res.Failed != 0 || len(res.Errors) != 0 {
		t.Fatalf("tick: %+v", res)
	}
	jobs := r.store.Jobs("c1", 10)
	if len(jobs) != 1 {
		t.Fatalf("jobs of c1: %+v", jobs)
	}
	j := jobs[0]
	if j.Status != raftstore.JobDone || j.Message != "keep going" || j.InjectID != "inj-1" || j.DeliveryAck == nil || j.DeliveryAck.StatusCode != 200 || j.FinishedAt == nil {
		t.Fatalf("job after delivery: %+v", j)
	}
	r.plugin.mu.Lock()
	call := r.plugin.calls[0]
	r.plugin.mu.Unlock()
	if call.Text != "keep going" || call.Kind != "renewal" || call.ConversationRef.RemoteConversationID == "" {
		t.Fatalf("inject sent: %+v", call)
	}
	c := r.conv(t, "c1")
	if c.ExecutionState != raftstore.ExecIdle || c.RepeatedRenewalCount != 1 || c.ConsecutiveFailureCount != 0 {
		t.Fatalf("conversation after delivery: %+v", c)
	}
	if ticks := r.store.Ticks(); ticks.Total != 1 || ticks.SkippedSystemPaused != 0 || !strings.Contains(ticks.LastOutcome, "done 2") {
		t.Fatalf("tick record: %+v", ticks)
	}
}

// Not quiet long enough, not linked, or not auto: no job.
func TestTickProjectsOnlyQuietLinkedAutoConversations(t *testing.T) {
	r := newRig(t, scheduler.Settings{IdleAfterMs: time.Hour.Milliseconds()})
	autoConv(t, r.store, "recent")
	// Auto but never linked by a plugin.
	if _, err := r.store.SetStatus(testCtx(t), "unlinked", raftstore.AutoAuto, ""); err != nil {
		t.Fatal(err)
	}
	if res := r.tick(t); res.Projected != 0 || res.Dispatched != 0 {
		t.Fatalf("tick over a recent and an unlinked conversation: %+v", res)
	}
	r.driver.settings.IdleAfterMs = 0
	if res := r.tick(t); res.Projected != 1 || res.Done != 1 {
		t.Fatalf("once quiet: %+v", res)
	}
	if got := len(r.store.Jobs("unlinked", 10)); got != 0 {
		t.Fatalf("%d jobs for the unlinked conversation", got)
	}
}

// A renewal never interrupts an instruction batch: a due job does not start
// while the conversation is instruction_running (it stays pending for a later
// tick), and a renewal finishing while a batch began meanwhile leaves the
// batch's state alone.
func TestRenewalAndInstructionBatchExcludeEachOther(t *testing.T) {
	r := newRig(t, scheduler.Settings{})
	autoConv(t, r.store, "c1")
	ref := instructions.ConvRef{Platform: "platform_a", LocalConversationID: "c1", RemoteConversationID: "r-c1"}
	ctx := testCtx(t)
	job, refused := r.createJob(t, "c1")
	if refused {
		t.Fatal("job refused")
	}
	if err := r.store.SetExecution(ctx, ref, raftstore.ExecInstructionRunning); err != nil {
		t.Fatal(err)
	}
	if r.startJob(t, job.ID) {
		t.Fatal("a renewal started while an instruction batch runs")
	}
	if js := r.store.Jobs("c1", 10); len(js) != 1 || js[0].Status != raftstore.JobPending {
		t.Fatalf("the job is not left pending: %+v", js)
	}
	if err := r.store.SetExecution(ctx, ref, raftstore.ExecIdle); err != nil {
		t.Fatal(err)
	}
	if !r.startJob(t, job.ID) {
		t.Fatal("the job did not start once the batch ended")
	}
	// A batch begins while the renewal is being delivered; the renewal's end
	// must not mark the conversation idle under it.
	if err := r.store.SetExecution(ctx, ref, raftstore.ExecInstructionRunning); err != nil {
		t.Fatal(err)
	}
	if _, err := r.driver.Deliver(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	if c, _ := r.store.Get("c1"); c.ExecutionState != raftstore.ExecInstructionRunning {
		t.Fatalf("execution_state %q after the renewal finished, want the batch's instruction_running", c.ExecutionState)
	}
}
