package e2e

import (
	"fmt"
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
