package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// The exec sandbox on the real kernel (docs/sandbox.md). A feature this
// kernel lacks skips the test with a message, except under CI=true, where
// the machine kind has them all and a skip would hide a regression.

type sandboxRuntime struct {
	Data struct {
		Sandbox sandbox.Report `json:"sandbox"`
	} `json:"data"`
}

// needSandbox returns the daemon's sandbox report, skipping (failing under
// CI) when a layer the test needs is missing.
func needSandbox(t *testing.T, d *harness.Daemon, need ...string) sandbox.Report {
	t.Helper()
	var rt sandboxRuntime
	d.DoAuth("GET", "/v1/runtime", nil).Decode(t, &rt)
	r := rt.Data.Sandbox
	for _, n := range need {
		var ok bool
		switch n {
		case "cgroup":
			ok = r.Cgroup.Mode == "v2" || r.Cgroup.Mode == "v2+v1"
		case "pids", "memory":
			ok = strings.Contains(strings.Join(r.Cgroup.Controllers, ","), n)
		case "landlock":
			ok = r.Landlock.ABI >= 2
		}
		if !ok {
			msg := fmt.Sprintf("this kernel lacks the sandbox layer %q: %+v", n, r)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return r
}

// escapees is a command that starts three processes that leave the shell's
// process group (setsid, a double fork, nohup with disown), writes their
// pids to pidFile, and then runs tail (or exits at once for "").
func escapees(pidFile, tail string) string {
	return fmt.Sprintf(`setsid sh -c 'echo $$ >> %[1]s; exec sleep 300' &
sh -c '(sh -c "echo \$\$ >> %[1]s; exec sleep 300" &)' 
bash -c 'nohup sh -c "echo \$\$ >> %[1]s; exec sleep 300" >/dev/null 2>&1 & disown'
while [ "$(wc -l < %[1]s 2>/dev/null || echo 0)" -lt 3 ]; do sleep 0.01; done
%[2]s`, pidFile, tail)
}

func TestSandboxEscapeesDie(t *testing.T) {
	t.Parallel()
	// The pid files are written outside the commands' scratch directories.
	pidDir := t.TempDir()
	d := harness.Start(t, harness.Options{Env: []string{"SVC_EXEC_WRITE_ROOTS=" + pidDir}})
	needSandbox(t, d, "cgroup")

	t.Run("shell_exits", func(t *testing.T) {
		f := filepath.Join(pidDir, t.Name()[strings.LastIndexByte(t.Name(), '/')+1:]+".pids")
		r := execCall(t, d, map[string]any{"command": escapees(f, "exit 0"), "timeoutMs": 20000})
		if !r.OK {
			t.Fatalf("exec: %+v", r)
		}
		waitDead(t, 10*time.Second, "escaped processes after the shell exited", readPids(t, f, 3, time.Second)...)
	})
	t.Run("timeout", func(t *testing.T) {
		f := filepath.Join(pidDir, t.Name()[strings.LastIndexByte(t.Name(), '/')+1:]+".pids")
		r := execCall(t, d, map[string]any{"command": escapees(f, "sleep 300"), "timeoutMs": 3000})
		if r.OK || r.Result.ErrorCode != "timed_out" {
			t.Fatalf("exec: %+v", r)
		}
		waitDead(t, 10*time.Second, "escaped processes after the timeout", readPids(t, f, 3, time.Second)...)
	})
	t.Run("caller_disconnect", func(t *testing.T) {
		f := filepath.Join(pidDir, t.Name()[strings.LastIndexByte(t.Name(), '/')+1:]+".pids")
		ctx, cancel := context.WithCancel(context.Background())
		body := fmt.Sprintf(`{"command":%q}`, escapees(f, "sleep 300"))
		req, _ := http.NewRequestWithContext(ctx, "POST", d.URL+"/v1/exec", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+d.Token)
		req.Header.Set("Content-Type", "application/json")
		done := make(chan struct{})
		go func() {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
			close(done)
		}()
		pids := readPids(t, f, 3, 10*time.Second)
		cancel()
		<-done
		waitDead(t, 10*time.Second, "escaped processes after the caller went away", pids...)
	})
	t.Run("worker_sigkill", func(t *testing.T) {
		f := filepath.Join(pidDir, t.Name()[strings.LastIndexByte(t.Name(), '/')+1:]+".pids")
		w := hostopsWorker(t, d)
		answered := make(chan int, 1)
		go func() {
			answered <- d.DoAuth("POST", "/v1/exec", map[string]any{"command": escapees(f, "sleep 300")}).Status
		}()
		pids := readPids(t, f, 3, 10*time.Second)
		if err := syscall.Kill(w.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if st := <-answered; st != 503 {
			t.Fatalf("exec on the killed worker answered %d", st)
		}
		waitDead(t, 10*time.Second, "escaped processes after the worker was SIGKILLed", pids...)
	})
}

func TestSandboxForkBombHeldAtPidsLimit(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{})
	r0 := needSandbox(t, d, "cgroup", "pids")
	w := hostopsWorker(t, d)
	stop := make(chan struct{})
	failures, total, polled := pollHealthz(d, stop)
	r := execCall(t, d, map[string]any{"command": "b(){ b | b & }; b; sleep 2; echo survived", "timeoutMs": 4000, "limits": map[string]any{"pids": 32}})
	close(stop)
	<-polled
	if !r.Result.PidsLimitHit {
		t.Fatalf("fork bomb: pidsLimitHit false: %+v", r)
	}
	if failures.Load() != 0 || total.Load() == 0 {
		t.Fatalf("/healthz failed %d of %d probes during the fork bomb", failures.Load(), total.Load())
	}
	if n := procsUnder(t, r0.Cgroup.Parent, w.Pid); n > 0 {
		t.Fatalf("%d fork bomb processes left in the worker's cgroups", n)
	}
	if r := execCall(t, d, map[string]any{"command": "echo fine"}); !r.OK || r.Result.Stdout != "fine\n" {
		t.Fatalf("exec after the fork bomb: %+v", r)
	}
}

func TestSandboxMemoryHogOOMKilledAlone(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{})
	needSandbox(t, d, "cgroup", "memory")
	before := hostopsWorker(t, d)
	// The shell holds the whole command substitution in memory.
	r := execCall(t, d, map[string]any{"command": `x=$(head -c 300000000 /dev/zero | tr '\0' a); echo ${#x}`, "limits": map[string]any{"memoryBytes": 64 << 20}})
	if r.OK || !r.Result.OOMKilled || r.Result.ErrorCode != "oom_killed" {
		t.Fatalf("memory hog: %+v", r)
	}
	if r.Result.PeakMemoryBytes == nil || *r.Result.PeakMemoryBytes > 80<<20 || *r.Result.PeakMemoryBytes < 32<<20 {
		t.Fatalf("peak memory %v, want about the 64 MiB limit", r.Result.PeakMemoryBytes)
	}
	if after := hostopsWorker(t, d); after.Pid != before.Pid {
		t.Fatalf("the worker changed (%d → %d): the OOM kill was not confined to the command", before.Pid, after.Pid)
	}
	ok := execCall(t, d, map[string]any{"command": "echo fine"})
	if !ok.OK || ok.Result.OOMKilled || ok.Result.CPUTimeUs == nil {
		t.Fatalf("exec after the OOM kill: %+v", ok)
	}
}

func TestSandboxLimitsValidation(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{Env: []string{"SVC_EXEC_LIMITS_MAX=memory=1GiB,pids=300"}})
	for _, lim := range []map[string]any{{"memoryBytes": 2 << 30}, {"pids": 301}, {"pids": 0}, {"memoryBytes": -1}, {"cpu": -1}} {
		resp := d.DoAuth("POST", "/v1/exec", map[string]any{"command": "echo ran", "limits": lim})
		var env envelope[any]
		resp.Decode(t, &env)
		if resp.Status != 422 || env.Error.Code != "invalid_limits" || env.Error.Message == "" {
			t.Fatalf("limits %v: %d %s", lim, resp.Status, resp.Body)
		}
	}
}

func TestSandboxWriteRoots(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	d := harness.Start(t, harness.Options{Env: []string{"SVC_HOSTOPS_ALLOWED_ROOTS=" + root}})
	needSandbox(t, d, "landlock")
	if err := os.WriteFile(filepath.Join(outside, "existing"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := execCall(t, d, map[string]any{"command": "echo in > inside && cat inside && echo t > $TMPDIR/t && cat $TMPDIR/t", "cwd": root}); !r.OK || r.Result.Stdout != "in\nt\n" {
		t.Fatalf("write inside the roots: %+v", r)
	}
	for _, c := range []struct{ name, cmd, created, want string }{
		{"direct", "echo x > " + outside + "/direct", "direct", "Permission denied"},
		{"symlink", "ln -s " + outside + " link && echo x > link/viasymlink", "viasymlink", "Permission denied"},
		{"mv", "echo x > moved && mv moved " + outside + "/moved", "moved", "Permission denied"},
		{"hardlink_out", "echo x > linked && ln linked " + outside + "/linked", "linked", "Permission denied"},
		// A hard link of an outside file into a root would give it the
		// root's write rights: Landlock refuses it as a cross-directory
		// reference (REFER), which the kernel reports as EXDEV, whatever
		// the file systems (sandbox/landlock_test.go has each errno).
		{"hardlink_in", "ln " + outside + "/existing hard && echo x >> hard", "", "Invalid cross-device link"},
		{"cd_dotdot", "cd " + root + "/.. && echo x > " + filepath.Base(outside) + "/dotdot", "dotdot", "Permission denied"},
	} {
		r := execCall(t, d, map[string]any{"command": c.cmd, "cwd": root})
		if r.OK || !strings.Contains(r.Result.Stderr, c.want) {
			t.Errorf("%s: want a failure with %q: %+v", c.name, c.want, r)
		}
		if c.created != "" {
			if _, err := os.Lstat(filepath.Join(outside, c.created)); err == nil {
				t.Errorf("%s: %s was created outside the write roots", c.name, c.created)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "existing")); string(b) != "keep" {
		t.Errorf("the file outside was changed: %q", b)
	}
	// The file routes cannot escape either, through the same symlink.
	resp := d.DoAuth("POST", "/v1/files/write", map[string]any{"path": filepath.Join(root, "link", "viaroute"), "content": "x"})
	if resp.Status == 200 {
		var env envelope[opOutcome[fileRes]]
		resp.Decode(t, &env)
		if env.Data.OK {
			t.Errorf("files/write through a symlink out of the roots: %s", resp.Body)
		}
	}
	if _, err := os.Lstat(filepath.Join(outside, "viaroute")); err == nil {
		t.Error("files/write created a file outside the roots")
	}
	// The worker itself runs confined (re-executed under its Landlock
	// domain, confine.go), so a path-check bug could not write there either.
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", hostopsWorker(t, d).Pid))
	if err != nil || !strings.Contains(string(env), "SVCD_HOSTOPS_CONFINED=1") {
		t.Errorf("the hostops worker is not the confined re-execution (%v)", err)
	}
}

// With no write roots configured a command writes only its scratch
// directory; two commands that run at the same time have separate Landlock
// domains, so neither can write into the other's scratch directory.
func TestSandboxScratchOnlyAndSeparate(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	plain := harness.Start(t, harness.Options{})
	needSandbox(t, plain, "landlock")
	if r := execCall(t, plain, map[string]any{"command": `echo t > "$TMPDIR/t" && cat "$TMPDIR/t" && echo n > /dev/null`}); !r.OK || r.Result.Stdout != "t\n" {
		t.Fatalf("write in the scratch directory with no roots configured: %+v", r)
	}
	for _, cmd := range []string{"echo x > " + outside + "/f", "cd " + outside + " && mkdir d"} {
		if r := execCall(t, plain, map[string]any{"command": cmd}); r.OK || !strings.Contains(r.Result.Stderr, "Permission denied") {
			t.Errorf("%s with no roots configured: want Permission denied: %+v", cmd, r)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Errorf("created outside the scratch directory: %v", ents)
	}

	// A publishes its TMPDIR through a shared write root and waits; B,
	// meanwhile, tries to write there.
	shared := t.TempDir()
	d := harness.Start(t, harness.Options{Env: []string{"SVC_EXEC_WRITE_ROOTS=" + shared}})
	a := make(chan opOutcome[execRes], 1)
	go func() {
		var env envelope[opOutcome[execRes]]
		defer func() { a <- env.Data }()
		resp := d.DoAuth("POST", "/v1/exec", map[string]any{"timeoutMs": 20000, "command": `echo a > "$TMPDIR/a" && echo "$TMPDIR" > ` + shared + `/a.tmp && mv ` + shared + `/a.tmp ` + shared + `/a && while [ ! -e ` + shared + `/done ]; do sleep 0.01; done; ls -A "$TMPDIR"`})
		_ = jsonUnmarshal(resp.Body, &env)
	}()
	var aDir string
	waitUntil(t, 10*time.Second, "command A to run", func() bool {
		b, err := os.ReadFile(filepath.Join(shared, "a"))
		aDir = strings.TrimSpace(string(b))
		return err == nil && aDir != ""
	})
	b := execCall(t, d, map[string]any{"command": `echo "$TMPDIR"; echo b > "$TMPDIR/b" && echo x > ` + aDir + `/fromB`})
	if b.OK || !strings.Contains(b.Result.Stderr, "Permission denied") || strings.TrimSpace(b.Result.Stdout) == aDir {
		t.Errorf("B writing into A's scratch directory %s while A runs: want Permission denied: %+v", aDir, b)
	}
	if err := os.WriteFile(filepath.Join(shared, "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := <-a; !r.OK || r.Result.Stdout != "a\n" {
		t.Errorf("A's scratch directory after B's attempt: %+v", r)
	}
}

func TestSandboxIdentityAndNoNewPrivs(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		msg := "exec_user needs the daemon to run as root"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// A setuid-root helper that prints its effective uid.
	dir := t.TempDir()
	for p := dir; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o755)
	}
	src := filepath.Join(dir, "euid.go")
	if err := os.WriteFile(src, []byte("package main\nimport (\"fmt\";\"os\")\nfunc main(){ fmt.Println(os.Geteuid()) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "euid")
	build := exec.Command("go", "build", "-o", bin, src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the setuid helper: %v\n%s", err, out)
	}
	if err := os.Chmod(bin, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	// Without no_new_privs the helper does become root (the control).
	if out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin).Output(); err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Fatalf("control: the setuid helper outside the sandbox printed %q (%v); want 0", out, err)
	}
	d := harness.Start(t, harness.Options{Env: []string{"SVC_EXEC_USER=nobody"}})
	r := execCall(t, d, map[string]any{"command": "id -u; id -G; " + bin, "cwd": "/"})
	if !r.OK {
		t.Fatalf("exec as nobody: %+v", r)
	}
	lines := strings.Fields(r.Result.Stdout)
	if len(lines) != 3 || lines[0] != "65534" || lines[2] != "65534" {
		t.Fatalf("as exec_user nobody: id -u, id -G, setuid helper printed %q; want 65534, nobody's group only, 65534", r.Result.Stdout)
	}
	if g := strings.Fields(lines[1]); len(g) != 1 {
		t.Fatalf("supplementary groups not cleared: %q", lines[1])
	}
	var rt sandboxRuntime
	d.DoAuth("GET", "/v1/runtime", nil).Decode(t, &rt)
	if rt.Data.Sandbox.Identity.UID != 65534 || !rt.Data.Sandbox.NoNewPrivs {
		t.Fatalf("runtime sandbox identity: %+v", rt.Data.Sandbox)
	}
}

// runRefused runs `svcd serve` expecting it to refuse to start.
func runRefused(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command(harness.Binary(t), "serve", "-listen", harness.FreePort(t), "-data-dir", t.TempDir())
	cmd.Env = append(append(os.Environ(), "SVC_SHARED_TOKEN=test-token-0123456789abcdef"), env...)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("svcd did not refuse to start within 20 s")
	}
	if err == nil {
		t.Fatalf("svcd started (exit 0): %s", out)
	}
	return string(out)
}

func TestSandboxRequiredRefusesWithMissingLayer(t *testing.T) {
	t.Parallel()
	// A parent that cannot be a cgroup: a directory below a control file.
	out := runRefused(t, "SVC_EXEC_SANDBOX=required", "SVC_EXEC_USER=nobody", "SVC_EXEC_CGROUP_PARENT=/cgroup.procs/svcd")
	for _, want := range []string{"exec_sandbox is \"required\"", "cgroup", "Delegate=yes"} {
		if !strings.Contains(out, want) {
			t.Fatalf("refusal does not say %q:\n%s", want, out)
		}
	}
	out = runRefused(t, "SVC_EXEC_USER=no-such-user-svcd")
	if !strings.Contains(out, "no-such-user-svcd") || !strings.Contains(out, "no such user") {
		t.Fatalf("unknown exec_user refusal:\n%s", out)
	}
}

// workerCgroups lists the command cgroups (c<n>) under the daemon's
// hostops worker directory, and the worker directories under the parent.
func workerCgroups(t *testing.T, parent string, workerPid int) (cmds []string, workers []string) {
	t.Helper()
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "w"+strconv.Itoa(workerPid)+"-") {
			continue
		}
		workers = append(workers, e.Name())
		sub, _ := os.ReadDir(filepath.Join(parent, e.Name()))
		for _, s := range sub {
			if s.IsDir() {
				cmds = append(cmds, s.Name())
			}
		}
	}
	return cmds, workers
}

func TestSandboxNoCgroupLeftAfter1000Execs(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{})
	r := needSandbox(t, d, "cgroup")
	w := hostopsWorker(t, d)
	for i := 0; i < 1000; i++ {
		if res := execCall(t, d, map[string]any{"command": "true"}); !res.OK {
			t.Fatalf("exec %d: %+v", i, res)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		cmds, _ := workerCgroups(t, r.Cgroup.Parent, w.Pid)
		// What may remain is the worker's small pool of prepared, unused
		// cgroups (at most 4) and one cgroup per idle spawner, armed for
		// its next command (at most 8, hostops idleSpawners), never one
		// per command.
		if len(cmds) <= 4+8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d command cgroups left after 1,000 execs: %v", len(cmds), cmds)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSandboxRestartRemovesStaleCgroups(t *testing.T) {
	// A cgroup parent of its own, and not parallel: a hostops worker
	// starting on this host removes the dead workers' directories under its
	// parent, and the test wants that to be this daemon's restart, not
	// another test's (or another svcd's on the machine) worker.
	parent := fmt.Sprintf("svcd-e2e-stale-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		// After the daemon's own clean-up: its workers die by their
		// parent-death signal, a moment later, and only then are their
		// directories stale.
		dirs, _ := sandbox.CgroupWritePaths(parent)
		for deadline := time.Now().Add(5 * time.Second); len(dirs) > 0; time.Sleep(50 * time.Millisecond) {
			left := dirs[:0]
			for _, dir := range dirs {
				sandbox.CleanStale(dir)
				if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
					left = append(left, dir)
				}
			}
			if dirs = left; len(dirs) > 0 && time.Now().After(deadline) {
				t.Errorf("the test's cgroup parents are not empty 5 s after the daemon: %v", dirs)
				return
			}
		}
	})
	pidDir := t.TempDir()
	d := harness.Start(t, harness.Options{Env: []string{"SVC_EXEC_WRITE_ROOTS=" + pidDir, "SVC_EXEC_CGROUP_PARENT=" + parent}})
	r := needSandbox(t, d, "cgroup")
	w := hostopsWorker(t, d)
	f := filepath.Join(pidDir, "pids")
	go func() {
		// No answer comes: the daemon is frozen, then killed.
		req, _ := http.NewRequest("POST", d.URL+"/v1/exec", strings.NewReader(fmt.Sprintf(`{"command":%q}`, escapees(f, "sleep 300"))))
		req.Header.Set("Authorization", "Bearer "+d.Token)
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	pids := readPids(t, f, 3, 10*time.Second)
	// Both die at once, as on a host crash of the unit: the supervisor is
	// frozen first so it cannot kill the cgroup when the worker goes.
	d.Stop()
	_ = syscall.Kill(w.Pid, syscall.SIGKILL)
	time.Sleep(200 * time.Millisecond)
	if _, workers := workerCgroups(t, r.Cgroup.Parent, w.Pid); len(workers) != 1 {
		t.Fatalf("the dead worker's cgroup directory is not there to be stale: %v", workers)
	}
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("escaped process %d died without the restart; the test proves nothing", p)
		}
	}
	d.Restart()
	waitDead(t, 5*time.Second, "processes of the stale cgroup after the restart", pids...)
	// The new worker removes stale directories in the background.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, workers := workerCgroups(t, r.Cgroup.Parent, w.Pid)
		if len(workers) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stale worker cgroup left 5 s after the restart: %v", workers)
		}
	}
}

// procsUnder counts the processes in the worker's command cgroups.
func procsUnder(t *testing.T, parent string, workerPid int) int {
	t.Helper()
	n := 0
	cmds, workers := workerCgroups(t, parent, workerPid)
	for _, w := range workers {
		for _, c := range cmds {
			b, _ := os.ReadFile(filepath.Join(parent, w, c, "cgroup.procs"))
			n += len(strings.Fields(string(b)))
		}
	}
	return n
}

func TestSandboxNetworkNoneAndReports(t *testing.T) {
	t.Parallel()
	d := harness.Start(t, harness.Options{Env: []string{"SVC_EXEC_NETWORK=none"}})
	host := execCall(t, d, map[string]any{"command": "true"})
	if !host.OK {
		t.Fatalf("exec: %+v", host)
	}
	// /proc/net/dev lists the interfaces of the reader's network namespace.
	r := execCall(t, d, map[string]any{"command": "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"})
	if !r.OK || r.Result.Stdout != "lo\n" {
		t.Fatalf("exec_network none: interfaces %q, want lo only: %+v", r.Result.Stdout, r)
	}
	// /health shows levels, never paths; /v1/runtime (token) the whole report.
	resp := d.Do("GET", "/health", nil)
	var h struct {
		Data struct {
			Sandbox map[string]any `json:"sandbox"`
		} `json:"data"`
	}
	resp.Decode(t, &h)
	if h.Data.Sandbox["mode"] != "best-effort" || h.Data.Sandbox["network"] != "none" || h.Data.Sandbox["no_new_privs"] != true {
		t.Fatalf("/health sandbox: %s", resp.Body)
	}
	if strings.Contains(string(resp.Body), "/sys/fs/cgroup") || strings.Contains(string(resp.Body), d.DataDir) {
		t.Fatalf("/health shows sandbox paths: %s", resp.Body)
	}
	st := d.DoAuth("GET", "/v1/status", nil)
	if !strings.Contains(string(st.Body), `"sandbox":{`) {
		t.Fatalf("/v1/status (svcctl status) has no sandbox: %s", st.Body)
	}
	rep := needSandbox(t, d)
	if rep.Network != "none" || rep.Mode != "best-effort" || rep.Cgroup.Mode == "" {
		t.Fatalf("/v1/runtime sandbox: %+v", rep)
	}
}
