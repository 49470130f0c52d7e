package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/workers/hostops"
)

// A command of plain words runs without /bin/sh where the shell is dash:
// the program is the process the result names (its own pid, the group's
// leader), where through the shell it is the shell's child. /v1/runtime
// says which it is; SVCD_EXEC_DIRECT=off sends everything through the
// shell. A command the shell must parse goes through it either way.
func TestExecPlainCommandRunsWithoutTheShell(t *testing.T) {
	if !hostops.ShellIsDash() {
		t.Skipf("%s is not dash (%q): every command goes through it", hostops.Shell, hostops.ResolvedShell())
	}
	direct := harness.Start(t, harness.Options{})
	shell := harness.Start(t, harness.Options{Env: []string{"SVCD_EXEC_DIRECT=off"}})
	for _, c := range []struct {
		d          *harness.Daemon
		command    string
		wantOwnPid bool
	}{
		{direct, "cat /proc/self/stat", true},
		{shell, "cat /proc/self/stat", false},
		{direct, "cat /proc/self/stat | cat", false},
	} {
		out := execCall(t, c.d, map[string]any{"command": c.command})
		if !out.OK {
			t.Fatalf("%q: %+v", c.command, out)
		}
		// /proc/self/stat: "pid (comm) state ppid pgrp ..."
		f := strings.Fields(out.Result.Stdout)
		if len(f) < 5 {
			t.Fatalf("%q: stdout %q", c.command, out.Result.Stdout)
		}
		pid, _ := strconv.Atoi(f[0])
		pgrp, _ := strconv.Atoi(f[4])
		if got := pid == out.Result.Pid; got != c.wantOwnPid {
			t.Errorf("%q: cat's pid %d, result pid %d: ran without the shell = %v, want %v", c.command, pid, out.Result.Pid, got, c.wantOwnPid)
		}
		if pgrp != out.Result.Pid {
			t.Errorf("%q: cat's process group %d, want the command's %d", c.command, pgrp, out.Result.Pid)
		}
	}
	for _, c := range []struct {
		d    *harness.Daemon
		want bool
	}{{direct, true}, {shell, false}} {
		var rt struct {
			Data struct {
				ExecShell struct {
					PlainCommandsDirect bool   `json:"plain_commands_direct"`
					Resolved            string `json:"resolved"`
					Shell               string `json:"shell"`
				} `json:"exec_shell"`
			} `json:"data"`
		}
		c.d.DoAuth("GET", "/v1/runtime", nil).Decode(t, &rt)
		if es := rt.Data.ExecShell; es.Shell != hostops.Shell || es.Resolved != hostops.ResolvedShell() || es.PlainCommandsDirect != c.want {
			t.Errorf("/v1/runtime exec_shell: %+v, want plain_commands_direct %v", es, c.want)
		}
	}
}
