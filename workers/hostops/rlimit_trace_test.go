package hostops

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// limitLine returns the "Max <name>" line of a /proc/PID/limits dump.
func limitLine(dump, name string) string {
	for _, line := range strings.Split(dump, "\n") {
		if strings.HasPrefix(line, name) {
			return strings.Join(strings.Fields(line), " ")
		}
	}
	return ""
}

// The limits are set on the shell itself while it is stopped at its execve,
// so they hold from its first instruction and for everything it starts. No
// SelfExecutable is configured: the shim cannot be what applied them.
func TestExecLimitsByTracing(t *testing.T) {
	l := newTestLocal(t, func(c *Config) {
		c.Rlimits = map[string]uint64{"nofile": 40, "core": 0, "cpu": 7, "fsize": 1 << 20}
		c.SelfExecutable = ""
	})
	if l.now().noTrace {
		t.Skip("tracing is not allowed here; limited execs use the shim")
	}
	// $$ is the shell: its own limits, read first thing, and a child's.
	res, err := l.Exec(context.Background(), ExecRequest{Command: "cat /proc/$$/limits; echo ---; cat /proc/self/limits", Timeout: 5 * time.Second}, nil)
	if err != nil || !res.OK {
		t.Fatalf("%+v %v", res, err)
	}
	shell, child, _ := strings.Cut(string(res.Stdout), "---")
	for _, dump := range []string{shell, child} {
		for name, want := range map[string]string{
			"Max open files": "Max open files 40 40 files", "Max core file size": "Max core file size 0 0 bytes",
			"Max cpu time": "Max cpu time 7 7 seconds", "Max file size": "Max file size 1048576 1048576 bytes",
		} {
			if got := limitLine(dump, name); got != want {
				t.Fatalf("%q, want %q in:\n%s", got, want, dump)
			}
		}
	}
	// A limit is enforced, not just displayed (fsize binds root too).
	f := "$TMPDIR/big" // the command's scratch directory: its one write root
	res, _ = l.Exec(context.Background(), ExecRequest{Command: "head -c 2097152 /dev/zero > " + f + "; wc -c < " + f, Timeout: 5 * time.Second}, nil)
	if strings.TrimSpace(string(res.Stdout)) != "1048576" {
		t.Fatalf("a 2 MiB write under fsize=1 MiB: %+v", res)
	}
}

// Concurrent limited execs each get their own limits and answers.
func TestExecLimitsByTracingConcurrently(t *testing.T) {
	l := newTestLocal(t, func(c *Config) { c.Rlimits = map[string]uint64{"nofile": 64}; c.SelfExecutable = "" })
	if l.now().noTrace {
		t.Skip("tracing is not allowed here")
	}
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := l.Exec(context.Background(), ExecRequest{Command: "ulimit -n; echo " + strings.Repeat("x", i), Timeout: 10 * time.Second}, nil)
			if err != nil || !res.OK || string(res.Stdout) != "64\n"+strings.Repeat("x", i)+"\n" {
				t.Errorf("exec %d: %+v %v", i, res, err)
			}
		}()
	}
	wg.Wait()
}

// A limit the worker may not set (above its own hard limit, unprivileged)
// fails the exec before the command runs; as root it is simply set.
func TestExecLimitsThatCannotBeSet(t *testing.T) {
	l := newTestLocal(t, func(c *Config) { c.Rlimits = map[string]uint64{"nofile": 1 << 40}; c.SelfExecutable = "" })
	res, err := l.Exec(context.Background(), ExecRequest{Command: "echo ran", Timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK {
		return // privileged, or the kernel accepted it
	}
	if res.ErrorCode != CodeSpawnFailed || strings.Contains(string(res.Stdout), "ran") {
		t.Fatalf("%+v", res)
	}
}
