package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
)

// Issue 32, attack 1 (its /proc part): a root command read the daemon's
// /proc/<pid>/environ (SVC_SHARED_TOKEN when the token comes from the
// environment, as here) and maps; a command of the daemon's own uid (the
// shipped unit) could too. Every svcd process is non-dumpable and commands
// have no CAP_SYS_PTRACE, so none of these opens.
func TestCommandCannotReadDaemonProc(t *testing.T) {
	t.Parallel()
	for _, way := range strangerWays(t) {
		t.Run(way.name, func(t *testing.T) {
			t.Parallel()
			d := way.start(t, harness.Options{})
			pids := map[string]int{"daemon": d.Pid()}
			for _, w := range workersOf(t, d) {
				if w.Pid > 0 {
					pids[w.Name] = w.Pid
				}
			}
			var script strings.Builder
			for name, pid := range pids {
				for _, f := range []string{"environ", "maps", "mem", "fd"} {
					// Following a descriptor's link is what reaches the
					// daemon's files (listing their numbers is not).
					read := fmt.Sprintf("head -c 64 /proc/%d/%s", pid, f)
					if f == "fd" {
						read = fmt.Sprintf("readlink /proc/%d/fd/0", pid)
					}
					fmt.Fprintf(&script, "if %s >/dev/null 2>&1; then echo '%s %s: READ'; else echo '%s %s: refused'; fi\n", read, name, f, name, f)
				}
			}
			r := execCall(t, d, map[string]any{"command": script.String(), "cwd": "/"})
			t.Logf("%s", r.Result.Stdout)
			if !r.OK || !strings.Contains(r.Result.Stdout, "daemon environ:") {
				t.Fatalf("exec: %+v", r)
			}
			if strings.Contains(r.Result.Stdout, "READ") {
				t.Fatalf("a command read a svcd process's /proc files:\n%s", r.Result.Stdout)
			}
		})
	}
}

// Issue 32, attack 1: a command of the daemon's own uid (root without
// exec_user, or the shipped unit's User=svcd) ran `cat <data_dir>/shared_token`
// and read raft's files. Its Landlock read rules now leave the daemon's
// files out; everything else stays readable, a file made after the start
// included (the spawner whose rules predate it is replaced).
func TestCommandCannotReadDaemonFiles(t *testing.T) {
	t.Parallel()
	for _, way := range strangerWays(t) {
		t.Run(way.name, func(t *testing.T) {
			t.Parallel()
			d := way.start(t, harness.Options{GeneratedToken: true})
			needSandbox(t, d, "landlock")
			before := filepath.Join(openDir(t), "readable")
			if err := os.WriteFile(before, []byte("before\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// Made after the daemon started, beside the data dir's tree.
			after := filepath.Join(os.TempDir(), "svcd-after-"+strings.ReplaceAll(way.name, " ", "-")+"-"+strconv.Itoa(os.Getpid()))
			if err := os.WriteFile(after, []byte("after\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(after) })
			targets := map[string]bool{ // path: must be readable
				filepath.Join(d.DataDir, "shared_token"): false,
				filepath.Join(d.DataDir, "raft.db"):      false,
				"/etc/hostname":                          true,
				before:                                   true,
				after:                                    true,
			}
			var script strings.Builder
			for p := range targets {
				fmt.Fprintf(&script, "if head -c 1 %s >/dev/null 2>&1; then echo 'READ %s'; else echo 'refused %s'; fi\n", p, p, p)
			}
			fmt.Fprintf(&script, "if ls %s >/dev/null 2>&1; then echo 'LISTED data dir'; else echo 'refused data dir'; fi\n", d.DataDir)
			r := execCall(t, d, map[string]any{"command": script.String(), "cwd": "/"})
			got := r.Result.Stdout
			t.Logf("%s", got)
			if !r.OK {
				t.Fatalf("exec: %+v", r)
			}
			for p, readable := range targets {
				if read := strings.Contains(got, "READ "+p+"\n"); read != readable {
					t.Errorf("%s: read %v, want %v", p, read, readable)
				}
			}
			if strings.Contains(got, "LISTED") {
				t.Errorf("a command listed the data dir")
			}
			var rt sandboxRuntime
			d.DoAuth("GET", "/v1/runtime", nil).Decode(t, &rt)
			for _, l := range rt.Data.Sandbox.Layers {
				if l.Name == "secrets" && !l.Given {
					t.Errorf("/v1/runtime: secrets layer not given: %s", l.Detail)
				}
			}
		})
	}
}
