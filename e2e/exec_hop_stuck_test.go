package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// A hostops worker that stops reading its exec hop (SIGSTOP: a debugger, a
// frozen cgroup, a wedged process) does not hang exec: the call whose
// request cannot be written answers 503 worker_call_failed naming the
// worker once the hop's write bound passes, the call waiting on that
// worker answers too and its command is killed, and the daemon replaces
// the worker so that exec works again.
func TestExecWorkerStoppedAnswersAndIsReplaced(t *testing.T) {
	t.Parallel()
	pidDir := t.TempDir()
	d := harness.Start(t, harness.Options{Env: []string{"SVC_EXEC_WRITE_ROOTS=" + pidDir}})
	before := hostopsWorker(t, d)
	pidFile := filepath.Join(pidDir, "pids")

	type answer struct {
		status int
		body   []byte
	}
	post := func(command string) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			resp := d.DoAuth("POST", "/v1/exec", map[string]any{"command": command})
			ch <- answer{resp.Status, resp.Body}
		}()
		return ch
	}
	await := func(ch <-chan answer, what string) answer {
		select {
		case a := <-ch:
			return a
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not answer", what)
			return answer{}
		}
	}
	waiting := post(fmt.Sprintf("echo $$ > %s; sleep 300", pidFile))
	pids := readPids(t, pidFile, 1, 5*time.Second)
	time.Sleep(300 * time.Millisecond) // Started reaches the supervisor's notes
	if err := syscall.Kill(before.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(before.Pid, syscall.SIGCONT) })

	// A request larger than the hop's socket buffer: its write cannot end
	// while the worker does not read.
	stuck := await(post("true #"+strings.Repeat("x", 900<<10)), "an exec on the stopped worker")
	for _, a := range []answer{stuck, await(waiting, "the exec waiting on the stopped worker")} {
		var env envelope[any]
		if err := jsonUnmarshal(a.body, &env); err != nil || a.status != 503 || env.OK || env.Error.Code != "worker_call_failed" ||
			!strings.Contains(env.Error.Message, "hostops worker (pid "+fmt.Sprint(before.Pid)+")") {
			t.Fatalf("exec on the stopped worker: %d %s", a.status, a.body)
		}
	}
	waitDead(t, 5*time.Second, "the command of the stopped worker", pids...)

	// Replaced: a new worker answers exec.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := d.DoAuth("POST", "/v1/exec", map[string]any{"command": "echo back"})
		if resp.Status == 200 && strings.Contains(string(resp.Body), `back\n`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exec still failing after the stopped worker: %d %s", resp.Status, resp.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitWorker(t, d, 10*time.Second, "replaced", func(w workerInfo) bool { return w.State == "running" && w.Pid != before.Pid })
}
