package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// execReloadConfig is the config file of the exec reload tests.
func execReloadConfig(t *testing.T, path, limits string, writeRoots ...string) {
	t.Helper()
	quoted := make([]string, len(writeRoots))
	for i, r := range writeRoots {
		quoted[i] = fmt.Sprintf("%q", r)
	}
	body := fmt.Sprintf("exec_limits = %q\nexec_write_roots = [%s]\n", limits, strings.Join(quoted, ", "))
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// hup sends SIGHUP and waits for the n-th reload line; it returns that line.
func hup(t *testing.T, d *harness.Daemon, n int) string {
	t.Helper()
	if err := syscall.Kill(d.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		lines := strings.Split(linesWithSub(d.Logs(), "SIGHUP: reload done"), "\n")
		if len(lines) >= n && lines[n-1] != "" {
			return lines[n-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reload line #%d within 30 s\n%s", n, d.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runtimeSandbox is /v1/runtime's sandbox report (with the token: roots
// included).
func runtimeSandbox(t *testing.T, d *harness.Daemon) (pids int64, writeRoots []string) {
	t.Helper()
	var rt sandboxRuntime
	d.DoAuth("GET", "/v1/runtime", nil).Decode(t, &rt)
	return rt.Data.Sandbox.Limits.Pids, rt.Data.Sandbox.Landlock.WriteRoots
}

// forkSixteen starts 16 background processes at once: held under pids=8,
// not under pids=32.
const forkSixteen = "for i in $(seq 16); do sleep 1 & done; wait; echo forked"

// TestSIGHUPReloadsExecLimitsAndRootsForNewCommands is issue 35's exec
// reload on the real binary: a daemon started with exec_limits pids=32 and
// write root A gets pids=8 and root B by SIGHUP. A command running across
// the reload keeps pids=32; new commands get pids=8 (16 processes held) and
// may write under B and not A; /v1/runtime shows the new values; a hostops
// worker respawned after kill -9 still has them; and a bad edit
// (exec_limits = "pids=abc") is reported as failed and changes nothing.
func TestSIGHUPReloadsExecLimitsAndRootsForNewCommands(t *testing.T) {
	dir, rootA, rootB := twoRoots(t)
	cfgPath := filepath.Join(dir, "svcd.hcl")
	execReloadConfig(t, cfgPath, "pids=32", rootA)
	d := harness.Start(t, harness.Options{Args: []string{"-config", cfgPath}})
	noDataRace(t, d)
	needSandbox(t, d, "cgroup", "pids", "landlock")
	if pids, roots := runtimeSandbox(t, d); pids != 32 || !slices.Contains(roots, rootA) {
		t.Fatalf("/v1/runtime before the reload: pids %d, write roots %v", pids, roots)
	}

	// The command that runs across the reload: it waits for go, then
	// starts 16 processes (fine under its pids=32).
	goFile, startedFile := filepath.Join(dir, "go"), filepath.Join(rootA, "started")
	old := make(chan opOutcome[execRes], 1)
	go func() {
		resp := d.DoAuth("POST", "/v1/exec", map[string]any{"timeoutMs": 120000,
			"command": "echo > " + startedFile + "; while [ ! -e " + goFile + " ]; do sleep 0.05; done; " + forkSixteen})
		var env envelope[opOutcome[execRes]]
		if err := json.Unmarshal(resp.Body, &env); err != nil || resp.Status != 200 {
			env.Data.Error = fmt.Sprintf("status %d: %s (%v)", resp.Status, resp.Body, err)
		}
		old <- env.Data
	}()
	if !waitFile(t, startedFile, "", 30*time.Second) {
		t.Fatalf("the long command never started\n%s", d.Logs())
	}

	execReloadConfig(t, cfgPath, "pids=8", rootB)
	line := hup(t, d, 1)
	t.Logf("reload: %s", line)
	for _, want := range []string{"exec_limits", "exec_write_roots"} {
		if !strings.Contains(line, want) {
			t.Errorf("the reload line does not name %s as applied: %s", want, line)
		}
	}
	if strings.Contains(line, "failed") {
		t.Errorf("the reload failed: %s", line)
	}
	if _, rest, _ := strings.Cut(line, "needs_restart="); strings.Contains(rest, "exec_") {
		t.Errorf("exec keys reported as needing a restart: %s", line)
	}
	checkNew := func(when string) {
		t.Helper()
		if r := execCall(t, d, map[string]any{"command": forkSixteen, "timeoutMs": 30000}); !r.Result.PidsLimitHit {
			t.Errorf("%s: 16 processes under pids=8 were not held: %+v", when, r)
		}
		if r := execCall(t, d, map[string]any{"command": "echo b > " + rootB + "/f && cat " + rootB + "/f"}); !r.OK || r.Result.Stdout != "b\n" {
			t.Errorf("%s: write under the new root B: %+v", when, r)
		}
		if r := execCall(t, d, map[string]any{"command": "echo a > " + rootA + "/f"}); r.OK || !strings.Contains(r.Result.Stderr, "Permission denied") {
			t.Errorf("%s: write under the old root A: want Permission denied, got %+v", when, r)
		}
		pids, roots := runtimeSandbox(t, d)
		if pids != 8 || !slices.Contains(roots, rootB) || slices.Contains(roots, rootA) {
			t.Errorf("%s: /v1/runtime: pids %d, write roots %v (want 8 and B without A)", when, pids, roots)
		}
	}
	checkNew("after SIGHUP")

	// The command started before the reload finishes with its pids=32.
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-old:
		if !r.OK || r.Result.PidsLimitHit || r.Result.Stdout != "forked\n" {
			t.Errorf("the command started before the reload did not keep its limits: %+v", r)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the command started before the reload never finished")
	}

	// A worker respawned after kill -9 starts with the reloaded config.
	w := hostopsWorker(t, d)
	if err := syscall.Kill(w.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitWorker(t, d, 30*time.Second, "respawned", func(n workerInfo) bool { return n.Pid != w.Pid && n.State == "running" })
	checkNew("after kill -9 of the hostops worker")

	// A bad edit is refused whole and changes nothing.
	execReloadConfig(t, cfgPath, "pids=abc", rootA)
	line = hup(t, d, 2)
	t.Logf("bad edit: %s", line)
	if !strings.Contains(line, "failed") || !strings.Contains(line, "exec_limits") {
		t.Errorf("the bad edit was not reported as failed: %s", line)
	}
	checkNew("after the refused edit")

	// A root that does not exist passes the config's own checks; the exec
	// reload refuses it with the path, and the rest of the config reloads.
	missing := filepath.Join(dir, "missing")
	execReloadConfig(t, cfgPath, "pids=8", missing)
	line = hup(t, d, 3)
	t.Logf("missing root: %s", line)
	if !strings.Contains(line, "failed") || !strings.Contains(line, "exec_write_roots") || !strings.Contains(line, missing) {
		t.Errorf("the missing root was not reported as failed: %s", line)
	}
	checkNew("after the refused missing root")
}

// TestSIGHUPMovesTheRootsOfAConfinedHostopsWorker: with
// hostops_allowed_roots set the worker confines itself by Landlock at start
// (confine.go), and Landlock only narrows, so moving the roots from A to B
// replaces the worker by a rolling restart (spawned with B) instead of
// reconfiguring it in place. File routes and commands then reach B and not
// A, and /v1/runtime shows B.
func TestSIGHUPMovesTheRootsOfAConfinedHostopsWorker(t *testing.T) {
	dir, rootA, rootB := twoRoots(t)
	cfgPath := filepath.Join(dir, "svcd.hcl")
	writeRoots := func(root string) {
		if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("hostops_allowed_roots = [%q]\n", root)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeRoots(rootA)
	d := harness.Start(t, harness.Options{Args: []string{"-config", cfgPath}})
	noDataRace(t, d)
	needSandbox(t, d, "landlock")
	before := hostopsWorker(t, d)
	if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", before.Pid)); err != nil || !strings.Contains(string(env), "SVCD_HOSTOPS_CONFINED=1") {
		t.Fatalf("the hostops worker is not confined (%v)", err)
	}
	if r := fileCall(t, d, "/v1/files/write", map[string]any{"path": filepath.Join(rootA, "f"), "content": "a"}); !r.OK {
		t.Fatalf("files/write under A before the reload: %+v", r)
	}

	writeRoots(rootB)
	line := hup(t, d, 1)
	t.Logf("reload: %s", line)
	if !strings.Contains(line, "hostops_allowed_roots") || strings.Contains(line, "failed") {
		t.Fatalf("the reload did not apply hostops_allowed_roots: %s", line)
	}
	if after := hostopsWorker(t, d); after.Pid == before.Pid {
		t.Fatalf("the confined worker (pid %d) was not replaced", before.Pid)
	}
	if r := fileCall(t, d, "/v1/files/write", map[string]any{"path": filepath.Join(rootB, "f"), "content": "b"}); !r.OK {
		t.Errorf("files/write under B after the reload: %+v", r)
	}
	if resp := d.DoAuth("POST", "/v1/files/write", map[string]any{"path": filepath.Join(rootA, "g"), "content": "a"}); resp.Status != 403 || !strings.Contains(string(resp.Body), "path_not_allowed") {
		t.Errorf("files/write under A after the reload: want 403 path_not_allowed, got %d %s", resp.Status, resp.Body)
	}
	if r := execCall(t, d, map[string]any{"command": "echo b > g && echo a > " + rootA + "/h", "cwd": rootB}); r.OK || !strings.Contains(r.Result.Stderr, "Permission denied") {
		t.Errorf("exec under B writing A: want Permission denied on A, got %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(rootB, "g")); err != nil || string(b) != "b\n" {
		t.Errorf("exec did not write under B: %q %v", b, err)
	}
	if _, roots := runtimeSandbox(t, d); !slices.Contains(roots, rootB) || slices.Contains(roots, rootA) {
		t.Errorf("/v1/runtime write roots %v: want B without A", roots)
	}
}

// noDataRace fails the test if the daemon reported a data race (with
// SVCD_E2E_RACE=1 the harness builds it race-enabled).
func noDataRace(t *testing.T, d *harness.Daemon) {
	t.Cleanup(func() {
		if strings.Contains(d.Logs(), "DATA RACE") {
			t.Errorf("the daemon reported a data race:\n%s", d.Logs())
		}
	})
}

// twoRoots makes a test folder with two root folders in it, a and b.
func twoRoots(t *testing.T) (dir, a, b string) {
	t.Helper()
	dir = t.TempDir()
	a, b = filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, r := range []string{a, b} {
		if err := os.Mkdir(r, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, a, b
}
