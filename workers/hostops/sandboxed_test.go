package hostops

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// needLandlock fails under CI (this machine kind has Landlock) and skips
// elsewhere when the kernel has none.
func needLandlock(t *testing.T, l *Local) {
	t.Helper()
	if l.sandbox.abi == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Landlock: %v", l.sandbox.problems)
		}
		t.Skipf("no Landlock: %v", l.sandbox.problems)
	}
}

func run(t *testing.T, l *Local, command string) ExecResult {
	t.Helper()
	res, err := l.Exec(context.Background(), ExecRequest{Command: command, Cwd: "/", Timeout: 20 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// With neither exec_write_roots nor hostops_allowed_roots, a command
// writes its scratch directory ($TMPDIR) and the device files a shell
// needs, and nothing else.
func TestExecDefaultWriteRoots(t *testing.T) {
	l := newTestLocal(t, nil)
	needLandlock(t, l)
	outside := t.TempDir()
	res := run(t, l, `echo in > "$TMPDIR/f" && cat "$TMPDIR/f" && echo null > /dev/null && echo out > /dev/stdout && echo err > /dev/stderr && mkdir "$TMPDIR/d" && echo ok`)
	if !res.OK || string(res.Stdout) != "in\nout\nok\n" || string(res.Stderr) != "err\n" {
		t.Fatalf("writes inside the scratch directory: %+v", res)
	}
	for _, cmd := range []string{"echo x > " + outside + "/f", "mkdir " + outside + "/d", "echo x > /tmp/svcd-default-roots-" + filepath.Base(outside)} {
		res := run(t, l, cmd)
		if res.OK || !strings.Contains(string(res.Stderr), "Permission denied") {
			t.Errorf("%s: want Permission denied: %+v", cmd, res)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Errorf("created outside the write roots: %v", ents)
	}
	if _, err := os.Stat("/tmp/svcd-default-roots-" + filepath.Base(outside)); err == nil {
		t.Error("created in /tmp")
	}
}

// Two commands that run at the same time have two Landlock domains: B
// cannot write into A's scratch directory (EACCES) while A runs, and
// each writes its own.
func TestExecScratchDirsAreSeparateDomains(t *testing.T) {
	shared := t.TempDir()
	l := newTestLocal(t, func(c *Config) { c.Sandbox.WriteRoots = append(c.Sandbox.WriteRoots, shared) })
	needLandlock(t, l)
	done := make(chan ExecResult, 1)
	go func() {
		res, _ := l.Exec(context.Background(), ExecRequest{Command: `echo a > "$TMPDIR/a" && echo "$TMPDIR" > ` + shared + `/a.tmp && mv ` + shared + `/a.tmp ` + shared + `/a && while [ ! -e ` + shared + `/done ]; do sleep 0.01; done; ls -A "$TMPDIR"`, Cwd: "/", Timeout: 20 * time.Second}, nil)
		done <- res
	}()
	var aDir string
	for deadline := time.Now().Add(10 * time.Second); aDir == ""; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(shared, "a")); err == nil {
			aDir = strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatal("command A did not start")
		}
	}
	b := run(t, l, `echo b > "$TMPDIR/b" && echo "$TMPDIR" && echo x > `+aDir+`/fromB`)
	if b.OK || !strings.Contains(string(b.Stderr), "Permission denied") || strings.TrimSpace(string(b.Stdout)) == aDir {
		t.Errorf("B writing into A's scratch directory %s: want Permission denied from its own: %+v", aDir, b)
	}
	if rm := run(t, l, `rm -f `+aDir+`/a`); rm.OK {
		t.Errorf("a command removed a file of another command's scratch directory: %+v", rm)
	}
	if err := os.WriteFile(filepath.Join(shared, "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if !a.OK || string(a.Stdout) != "a\n" {
		t.Fatalf("A's scratch directory holds more (or less) than its own file: %+v", a)
	}
}

// A scratch directory is emptied after its command: the next command that
// gets it finds nothing of the one before, and writes it again.
func TestExecScratchEmptiedBetweenCommands(t *testing.T) {
	l := newTestLocal(t, nil)
	needLandlock(t, l)
	seen := map[string]bool{}
	for i := 0; i < 12; i++ {
		res := run(t, l, `ls -A "$TMPDIR"; echo "$TMPDIR"; mkdir "$TMPDIR/d" && echo x > "$TMPDIR/d/f" && chmod 0 "$TMPDIR/d" && echo x > "$TMPDIR/f"`)
		lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
		if !res.OK || len(lines) != 1 {
			t.Fatalf("command %d found a used scratch directory: %+v", i, res)
		}
		seen[lines[0]] = true
	}
	if len(seen) > idleSpawners+1 {
		t.Errorf("sequential commands used %d scratch directories; spawners are not reused", len(seen))
	}
	l.sandbox.cleanup.Wait()
	for d := range seen {
		if ents, err := os.ReadDir(d); err == nil && len(ents) > 0 {
			t.Errorf("scratch directory %s not emptied: %v", d, ents)
		}
	}
}

// A recycled cgroup reports what the current command did, not what the
// ones before did in it.
func TestExecRecycledCgroupCounters(t *testing.T) {
	l := newTestLocal(t, nil)
	if l.sandbox.tree == nil || !hasCtl(l.sandbox.tree.Controllers(), "pids") {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no pids controller: %v", l.sandbox.problems)
		}
		t.Skipf("no pids controller: %v", l.sandbox.problems)
	}
	few := sandbox.Limits{MemoryBytes: 64 << 20, Pids: 4}
	for i := 0; i < 6; i++ { // the pool holds 4: rounds 5 and 6 get recycled cgroups
		hit, err := l.Exec(context.Background(), ExecRequest{Command: "for i in 1 2 3 4 5 6 7 8; do sleep 0.2 & done; wait", Cwd: "/", Timeout: 20 * time.Second, Limits: &few}, nil)
		if err != nil || !hit.PidsLimitHit {
			t.Fatalf("round %d: the pids limit was not reported: %+v %v", i, hit, err)
		}
		l.sandbox.cleanup.Wait() // recycled before the next command
		calm := run(t, l, "true")
		if !calm.OK || calm.PidsLimitHit || calm.OOMKilled || calm.CPUTimeMicros < 0 || calm.CPUTimeMicros > 200_000 {
			t.Fatalf("round %d: `true` after a command that hit the pids limit: %+v", i, calm)
		}
		l.sandbox.cleanup.Wait()
	}
}

func hasCtl(ctls []string, c string) bool {
	for _, x := range ctls {
		if x == c {
			return true
		}
	}
	return false
}

// A spawner waits for its next command inside that command's v1 cgroups
// (cmdSandbox.arm), so the fork migrates nothing; the pids limit still
// gives the command exactly what was asked, the thread not counted, on an
// armed spawner and on one made for the command alike.
func TestExecArmedSpawnerPidsExact(t *testing.T) {
	l := newTestLocal(t, nil)
	if l.sandbox.tree == nil || !hasCtl(l.sandbox.tree.Controllers(), "pids") {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no pids controller: %v", l.sandbox.problems)
		}
		t.Skipf("no pids controller: %v", l.sandbox.problems)
	}
	// The shell and two children: three processes.
	const three = "sleep 0.1 & sleep 0.1 & wait"
	exact, short := sandbox.Limits{MemoryBytes: 64 << 20, Pids: 3}, sandbox.Limits{MemoryBytes: 64 << 20, Pids: 2}
	armed := 0
	for i := 0; i < 6; i++ {
		if i%2 == 0 {
			l.sandbox.cleanup.Wait() // the spawner is back, armed
		}
		if sl := l.sandbox.take(); sl != nil {
			if sl.cg != nil && sl.cg.Hosted() {
				armed++
			}
			l.sandbox.release(sl)
		}
		ok, err := l.Exec(context.Background(), ExecRequest{Command: three, Cwd: "/", Timeout: 20 * time.Second, Limits: &exact}, nil)
		if err != nil || !ok.OK || ok.PidsLimitHit {
			t.Fatalf("round %d: three processes under pids=3: %+v %v", i, ok, err)
		}
		hit, err := l.Exec(context.Background(), ExecRequest{Command: three, Cwd: "/", Timeout: 20 * time.Second, Limits: &short}, nil)
		if err != nil || !hit.PidsLimitHit {
			t.Fatalf("round %d: three processes under pids=2 were not held: %+v %v", i, hit, err)
		}
	}
	if l.sandbox.tree.Mode() == "v2+v1" && armed == 0 {
		t.Errorf("no idle spawner was armed in its next command's cgroup (mode %s)", l.sandbox.tree.Mode())
	}
	l.sandbox.cleanup.Wait()
}

// Cgroups are reused (recycled, or refreshed in place for an armed
// spawner) only when nothing wrote cgroup.kill to them: this kernel kills
// every process later cloned into a cgroup that was ever killed. Commands
// after one that left a process behind, one that timed out and plain ones
// all run to their end.
func TestExecReusedCgroupsDoNotKillTheNextCommand(t *testing.T) {
	l := newTestLocal(t, nil)
	if l.sandbox.tree == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no cgroup: %v", l.sandbox.problems)
		}
		t.Skipf("no cgroup: %v", l.sandbox.problems)
	}
	for i, first := range []ExecRequest{
		{Command: "true", Timeout: 10 * time.Second},
		{Command: "setsid sleep 30 & true", Timeout: 10 * time.Second},
		{Command: "sleep 30", Timeout: 200 * time.Millisecond},
	} {
		if _, err := l.Exec(context.Background(), first, nil); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 6; j++ {
			if j%2 == 0 {
				l.sandbox.cleanup.Wait() // the cgroup back for reuse
			}
			if res := run(t, l, "true"); !res.OK {
				t.Fatalf("case %d, command %d after %q: %+v", i, j, first.Command, res)
			}
		}
	}
}

// A kill written to a command's cgroup by its path from outside the worker
// (the supervisor's kill of a call that failed, landing after the command
// ended) would kill every later command forked into that cgroup at birth;
// the worker drops a cgroup whose command was SIGKILLed, so at most the
// next command is lost, not every command of that spawner.
func TestExecCgroupKilledFromOutsideIsDropped(t *testing.T) {
	l := newTestLocal(t, nil)
	if l.sandbox.tree == nil || l.sandbox.tree.Mode() != "v2+v1" && l.sandbox.tree.Mode() != "v2" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no v2 cgroup: %v", l.sandbox.problems)
		}
		t.Skipf("no v2 cgroup: %v", l.sandbox.problems)
	}
	run(t, l, "true")
	l.sandbox.cleanup.Wait()
	sl := l.sandbox.take()
	if sl == nil || sl.cg == nil {
		t.Fatal("no armed idle spawner after a command")
	}
	path := sl.cg.Path()
	l.sandbox.release(sl)
	sandbox.KillCgroup(path) // as Started.Kill does, late
	for i := 0; i < 4; i++ {
		res, err := l.Exec(context.Background(), ExecRequest{Command: "true", Timeout: 10 * time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The first command may be born in the killed cgroup and die.
		if !res.OK && (i > 0 || res.Signal != "SIGKILL") {
			t.Fatalf("command %d after a kill from outside: %+v", i, res)
		}
		l.sandbox.cleanup.Wait()
	}
}

// The worker's main thread never lives in a command's cgroup: it is the
// process in v1 cgroup.procs and /proc/self/cgroup and, in v1 memcg, the
// owner of the worker's memory (a spawner thread that Go had placed on it
// took the worker into its commands' cgroups: pluginkit.Spawner).
func TestWorkerMainThreadStaysOutOfCommandCgroups(t *testing.T) {
	l := newTestLocal(t, nil)
	if l.sandbox.tree == nil {
		t.Skipf("no cgroups: %v", l.sandbox.problems)
	}
	for i := 0; i < 8; i++ {
		if res := run(t, l, "true"); !res.OK {
			t.Fatalf("%+v", res)
		}
		l.sandbox.cleanup.Wait()
		b, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "svcd-exec") {
			t.Fatalf("after command %d the worker's main thread is in a command cgroup:\n%s", i, b)
		}
	}
}
