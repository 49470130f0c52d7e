package e2e

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// waitFile waits (bounded) until the file at path contains substr.
func waitFile(t *testing.T, path, substr string, timeout time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), substr) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSIGHUPReloadsLogLevelAndReopensRotatedLogUnderLoad is logrotate's
// create-mode rotation (rename, then kill -HUP) and an operator's level
// change, with requests in flight the whole time: before issue 35 SIGHUP
// killed the daemon. The daemon must stay up, answer every request, reopen
// the configured path (new lines land in the new file, the renamed file keeps
// the old ones), apply the config file's new log_level (debug request lines
// appear), and say in its log what it reloaded and what needs a restart.
func TestSIGHUPReloadsLogLevelAndReopensRotatedLogUnderLoad(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "log", "svcd.log")
	cfgPath := filepath.Join(dir, "svcd.hcl")
	if err := os.WriteFile(cfgPath, []byte("log_level = \"info\"\nexec_max_concurrent = 32\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := harness.Start(t, harness.Options{Args: []string{"-config", cfgPath, "-log-json", "-log-file", logPath}})
	t.Cleanup(func() { // with SVCD_E2E_RACE=1 the daemon is race-enabled
		if strings.Contains(d.Logs(), "DATA RACE") {
			t.Errorf("the daemon reported a data race:\n%s", d.Logs())
		}
	})
	if strings.Contains(d.Logs(), `"path":"/v1/status"`) {
		t.Fatal("debug request lines before the level was raised")
	}

	var answered, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var r *harness.Response
				if g%2 == 0 {
					r = d.DoAuth("POST", "/v1/exec", map[string]any{"command": "echo hup-" + strconv.Itoa(i)})
				} else {
					r = d.Do("GET", "/v1/status", nil)
				}
				if r.Status != 200 {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, strconv.Itoa(r.Status)+" "+string(r.Body))
					continue
				}
				answered.Add(1)
			}
		})
	}
	// Load is running: wait until some requests were answered.
	deadline := time.Now().Add(30 * time.Second)
	for answered.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}

	// logrotate (create mode): rename, then HUP. And the operator's edit.
	rotated := logPath + "-20261128"
	if err := os.Rename(logPath, rotated); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte("log_level = \"debug\"\nexec_max_concurrent = 16\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(d.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if !waitFile(t, logPath, "SIGHUP: reload done", 20*time.Second) {
		t.Fatalf("no reload line in the reopened %s\nstderr:\n%s", logPath, d.Logs())
	}
	// Debug request lines now reach the new file while load goes on.
	if !waitFile(t, logPath, `"path":"/v1/status"`, 20*time.Second) {
		t.Fatalf("no debug request line after log_level = debug\nstderr:\n%s", d.Logs())
	}
	before := answered.Load()
	deadline = time.Now().Add(30 * time.Second)
	for answered.Load() < before+20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	if n := failed.Load(); n > 0 {
		t.Fatalf("%d requests failed around SIGHUP (first: %v)", n, firstErr.Load())
	}
	if answered.Load() < before+20 {
		t.Fatalf("requests stopped being answered after SIGHUP (%d before, %d after)", before, answered.Load())
	}
	t.Logf("%d requests answered (%d of them by the time the reload showed in the new log), none failed", answered.Load(), before)
	newLog, _ := os.ReadFile(logPath)
	oldLog, _ := os.ReadFile(rotated)
	for _, want := range []string{`"log_file"`, `"config"`, `"exec_max_concurrent"`, `"needs_restart"`} {
		if !strings.Contains(string(newLog), want) {
			t.Errorf("reload line lacks %s:\n%s", want, linesWithSub(string(newLog), "SIGHUP"))
		}
	}
	if !strings.Contains(string(newLog), `"log level changed"`) && !strings.Contains(string(newLog), "log level changed") {
		t.Errorf("no 'log level changed' line in the new file")
	}
	if !strings.Contains(string(oldLog), "listening") || strings.Contains(string(oldLog), "SIGHUP: reload done") {
		t.Errorf("the rotated file should keep the lines before the HUP and none after")
	}
	if st, err := os.Stat(logPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("reopened log file mode = %v (%v), want 0600", st.Mode().Perm(), err)
	}
	// Still up and draining on SIGTERM as before.
	if err := d.Terminate(20 * time.Second); err != nil {
		t.Fatalf("SIGTERM after SIGHUP: %v", err)
	}
}

func linesWithSub(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSecondSIGTERMStopsAtOnce: the first SIGTERM drains (a 30 s command in
// flight holds it for shutdown_ms); a second one ends the process at once,
// with a non-zero status so systemd does not count it a clean stop.
func TestSecondSIGTERMStopsAtOnce(t *testing.T) {
	d := harness.Start(t, harness.Options{Env: []string{"SVC_SHUTDOWN_TIMEOUT_MS=60000"}})
	// A sleep no other test runs, found in /proc once it started.
	const long = "31.713"
	go func() {
		// Its answer is cut by the exit; only the drain it holds matters.
		body := `{"command":"sleep ` + long + `","timeoutMs":40000}`
		req, _ := http.NewRequest("POST", d.URL+"/v1/exec", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+d.Token)
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	if !waitProcess("sleep\x00"+long+"\x00", 20*time.Second) {
		t.Fatalf("the long command never started\n%s", d.Logs())
	}
	if err := syscall.Kill(d.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !d.WaitLog("shutting down", 20*time.Second) {
		t.Fatalf("first SIGTERM: no drain\n%s", d.Logs())
	}
	start := time.Now()
	if err := syscall.Kill(d.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := d.Terminate(10 * time.Second) // waits for the exit the second signal caused
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("after a second SIGTERM: %v (want exit status 1 within 10 s)\n%s", err, d.Logs())
	}
	if !strings.Contains(d.Logs(), "second terminated while draining: stopping at once") {
		t.Errorf("no line saying why it stopped at once:\n%s", d.Logs())
	}
	t.Logf("stopped %s after the second SIGTERM", time.Since(start).Round(time.Millisecond))
	// The command in flight does not outlive the daemon: the workers get
	// Pdeathsig and kill their commands.
	deadline := time.Now().Add(20 * time.Second)
	for waitProcess("sleep\x00"+long+"\x00", 0) {
		if time.Now().After(deadline) {
			t.Fatal("the command in flight outlived the daemon stopped by a second SIGTERM")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitProcess waits (bounded) until a process with this exact argv
// (NUL-separated, as /proc/PID/cmdline has it) runs.
func waitProcess(cmdline string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			if b, err := os.ReadFile(p); err == nil && string(b) == cmdline {
				return true
			}
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
