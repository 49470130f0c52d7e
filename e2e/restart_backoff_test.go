package e2e

import (
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// TestHealthyWorkerKillIsAFirstCrash: a worker killed after it ran longer
// than worker_healthy_after_ms is restarted as if it had never crashed, so
// kills spread over calm periods never add up to a crash loop; kills in quick
// succession still do.
func TestHealthyWorkerKillIsAFirstCrash(t *testing.T) {
	t.Parallel()
	const healthyAfter = time.Second
	d := harness.Start(t, harness.Options{Env: []string{
		"SVC_WORKER_CRASH_LOOP_COUNT=3", "SVC_WORKER_CRASH_LOOP_WINDOW_MS=60000", "SVC_WORKER_BACKOFF_BASE_MS=20",
		"SVC_WORKER_HEALTHY_AFTER_MS=1000",
	}})
	kill := func() workerInfo {
		w := waitWorker(t, d, 5*time.Second, "running", func(w workerInfo) bool { return w.State == "running" })
		if err := syscall.Kill(w.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		return w
	}
	for i := 1; i <= 3; i++ {
		w := waitWorker(t, d, 5*time.Second, "running", func(w workerInfo) bool { return w.State == "running" })
		if out := execCall(t, d, map[string]any{"command": "echo back"}); !out.OK || out.Result.Stdout != "back\n" {
			t.Fatalf("exec before kill %d: %+v", i, out)
		}
		time.Sleep(healthyAfter + 200*time.Millisecond) // a calm period longer than worker_healthy_after_ms
		old := kill()
		back := waitWorker(t, d, 5*time.Second, "back after a calm kill", func(x workerInfo) bool {
			return x.State == "running" && x.Pid != 0 && x.Pid != old.Pid || x.State == "failed"
		})
		if back.State != "running" || back.Restarts != w.Restarts+1 {
			t.Fatalf("kill %d after a calm period: %+v (three kills in the window would mark it failed without the reset)", i, back)
		}
	}
	// A real crash loop: the last calm exit and two kills of instances that
	// had not run healthy yet.
	for i := 0; i < 2; i++ {
		old := kill()
		if i == 0 {
			waitWorker(t, d, 5*time.Second, "restarted", func(x workerInfo) bool { return x.Pid != 0 && x.Pid != old.Pid })
		}
	}
	failed := waitWorker(t, d, 5*time.Second, "failed", func(w workerInfo) bool { return w.State == "failed" })
	if failed.Pid != 0 {
		t.Fatalf("failed worker still has a pid: %+v", failed)
	}
}
