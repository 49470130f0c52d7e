package e2e

import (
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// execState is conversation id's execution_state as d answers it.
func execState(t *testing.T, d *harness.Daemon, id string) string {
	t.Helper()
	var env struct {
		Data struct {
			ExecutionState string `json:"execution_state"`
		} `json:"data"`
	}
	r := d.Do("GET", "/v1/renewal/conversations/"+url.PathEscape(id), nil)
	if r.Status != 200 {
		return ""
	}
	r.Decode(t, &env)
	return env.Data.ExecutionState
}

// taskOf is task id as d answers it.
func taskOf(t *testing.T, d *harness.Daemon, id string) recoverTask {
	t.Helper()
	var env struct {
		Data recoverTask `json:"data"`
	}
	if r := d.Do("GET", "/v1/tasks/"+id, nil); r.Status == 200 {
		r.Decode(t, &env)
	}
	return env.Data
}

// holdsUntil checks, until the batch's end draws near, that d shows its
// task running and its conversation instruction_running (no renewal may be
// typed into it); then that the task ends and the conversation returns to
// idle once the batch is over.
func holdsUntil(t *testing.T, d *harness.Daemon, task recoverTask, conv string, until time.Time) {
	t.Helper()
	for time.Now().Before(until) {
		if x := taskOf(t, d, task.ID); x.Status != "running" {
			t.Fatalf("the batch still runs, but %s shows its task %+v", d.Addr, x)
		}
		if st := execState(t, d, conv); st != "instruction_running" {
			t.Fatalf("the batch still runs, but %s shows %s %s: a renewal could be typed into it", d.Addr, conv, st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitUntil(t, 30*time.Second, "the task to end once the batch is over", func() bool { return taskOf(t, d, task.ID).Status != "running" })
	waitUntil(t, 10*time.Second, "the conversation back to idle", func() bool { return execState(t, d, conv) == "idle" })
}

// A batch running on a leader that freezes (SIGSTOP) while the standby
// takes the lead holds its conversation until it is over. The new leader
// used to end its task node_lost at once and return the conversation to
// idle, so its scheduler could type a renewal into a conversation whose
// batch went on running when the old leader woke (chaos, stop 39). Now its
// reaper asks the old leader (GET /health: runner, running_tasks), keeps
// the task while that node is silent (up to 15 s) or still runs it, and
// ends it, releasing the conversation, once the batch is over: the old
// leader, a standby now, cannot write the finish itself.
func TestFrozenLeadersBatchHoldsItsConversationUntilItEnds(t *testing.T) {
	t.Parallel()
	c := startHACluster(t)
	const conv = "conv-reap-frozen"
	task := startLostBatch(t, c.n1, conv, "m-reap-frozen", block("@svc::exec::sleep 12"))
	batchEnd := time.Now().Add(12 * time.Second)
	if err := syscall.Kill(c.n1.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "n2 to lead while n1 is frozen", func() bool { r, _ := role(t, c.n2); return r == "leader" })
	time.Sleep(2 * time.Second) // n2's reaper asks n1, which cannot answer
	if err := syscall.Kill(c.n1.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	holdsUntil(t, c.n2, task, conv, batchEnd.Add(-2*time.Second))
}

// An HTTP ingest sent to the standby is forwarded to the leader and runs
// there (its state and its report's delivery live there): it used to run
// on the standby and fail at its first write with 503 not_leader, a code
// the route does not list.
func TestIngestOnTheStandbyRunsOnTheLeader(t *testing.T) {
	t.Parallel()
	c := startHACluster(t)
	res := ingest(t, c.n2, "conv-ingest-standby", "m-standby", block("@svc::exec::echo on-the-leader"), true)
	if res.Ingest.Status != "executed" || res.Ingest.TaskID == "" {
		t.Fatalf("ingest through the standby: %+v", res.Ingest)
	}
	var env struct {
		Data struct {
			Runner string `json:"runner"`
			Status string `json:"status"`
		} `json:"data"`
	}
	c.n1.Do("GET", "/v1/tasks/"+res.Ingest.TaskID, nil).Decode(t, &env)
	if env.Data.Status != "succeeded" || !strings.HasPrefix(env.Data.Runner, "n1/") {
		t.Fatalf("the batch's task: %+v, want succeeded and run by n1", env.Data)
	}
}
