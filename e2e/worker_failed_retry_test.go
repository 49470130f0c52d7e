package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// failedWorker is the hostops row of GET /v1/workers with the fields a
// failed worker carries.
type failedWorker struct {
	State        string     `json:"state"`
	Pid          int        `json:"pid"`
	FailedReason string     `json:"failed_reason"`
	RetryAt      *time.Time `json:"retry_at"`
	LastExit     *struct {
		At time.Time `json:"at"`
	} `json:"last_exit"`
}

// delay is how long after the last exit the failed worker retries.
func (f failedWorker) delay() time.Duration { return f.RetryAt.Sub(f.LastExit.At) }

func hostopsFailedView(t *testing.T, d *harness.Daemon) failedWorker {
	t.Helper()
	resp := d.Do("GET", "/v1/workers", nil)
	if resp.Status != 200 {
		t.Fatalf("GET /v1/workers: %d %s", resp.Status, resp.Body)
	}
	var env envelope[struct {
		Workers []struct {
			Name string `json:"name"`
			failedWorker
		} `json:"workers"`
	}]
	resp.Decode(t, &env)
	for _, w := range env.Data.Workers {
		if w.Name == "hostops" {
			return w.failedWorker
		}
	}
	t.Fatal("no hostops worker in GET /v1/workers")
	return failedWorker{}
}

// A worker that crash-loops becomes failed, says why and when it retries,
// and comes back on its own after worker_failed_retry_ms; a second crash
// loop doubles the delay. Exec works again without an operator.
func TestWorkerFailedRetriesOnItsOwn(t *testing.T) {
	t.Parallel()
	const retry = 300 * time.Millisecond
	d := harness.Start(t, harness.Options{Env: []string{
		"SVC_WORKER_CRASH_LOOP_COUNT=2", "SVC_WORKER_CRASH_LOOP_WINDOW_MS=60000", "SVC_WORKER_BACKOFF_BASE_MS=20",
		"SVC_WORKER_FAILED_RETRY_MS=300",
	}})
	crashLoop := func(round int) failedWorker {
		t.Helper()
		for i := 0; i < 2; i++ {
			w := waitWorker(t, d, 10*time.Second, "running", func(x workerInfo) bool { return x.State == "running" && x.Pid != 0 })
			if err := syscall.Kill(w.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				waitWorker(t, d, 10*time.Second, "restarted", func(x workerInfo) bool { return x.Pid != 0 && x.Pid != w.Pid })
			}
		}
		var f failedWorker
		deadline := time.Now().Add(10 * time.Second)
		for f = hostopsFailedView(t, d); f.State != "failed"; f = hostopsFailedView(t, d) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: not failed after a crash loop: %+v", round, f)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if !strings.Contains(f.FailedReason, "crash loop: 2 exits") || !strings.Contains(f.FailedReason, "SIGKILL") {
			t.Errorf("round %d: failed_reason %q does not say why", round, f.FailedReason)
		}
		if f.RetryAt == nil || f.LastExit == nil {
			t.Fatalf("round %d: failed worker without retry_at: %+v", round, f)
		}
		return f
	}
	// Round 1: retry_at 300 ms after the last exit; then back, serving exec.
	f := crashLoop(1)
	if got := f.delay(); got < retry || got > retry+time.Second {
		t.Errorf("round 1: retry_at is %s after the last exit, want %s", got, retry)
	}
	back := waitWorker(t, d, 10*time.Second, "back on its own", func(x workerInfo) bool { return x.State == "running" && x.Pid != 0 })
	if after := hostopsFailedView(t, d); after.FailedReason != "" || after.RetryAt != nil {
		t.Errorf("a running worker still shows the failure: %+v", after)
	}
	if out := execCall(t, d, map[string]any{"command": "echo back"}); !strings.Contains(out.Result.Stdout, "back") {
		t.Fatalf("exec after the retry (pid %d): %+v", back.Pid, out)
	}
	if m := d.Do("GET", "/metrics", nil); !strings.Contains(string(m.Body), `svcd_worker_restarts_total{reason="failed-retry",worker="hostops"} 1`) {
		t.Errorf("/metrics does not count the retry as failed-retry:\n%s", grepLines(string(m.Body), "svcd_worker_restarts_total"))
	}
	// Round 2: the next crash loop waits twice as long.
	f = crashLoop(2)
	if got := f.delay(); got < 2*retry || got > 2*retry+time.Second {
		t.Errorf("round 2: retry_at is %s after the last exit, want the doubled %s", got, 2*retry)
	}
	waitWorker(t, d, 10*time.Second, "back after the doubled delay", func(x workerInfo) bool { return x.State == "running" && x.Pid != 0 })
}
