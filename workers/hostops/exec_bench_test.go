package hostops

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// BenchmarkLocalExec: Local.Exec of `true` (pipes, process group, output
// capture, exit description) against os/exec running the same `sh -c true`
// in the same process. scripts/bench-style ratio: baseline first. Run it
// with -cpu 1 for the worker's single P. local_exec_worker_signals is
// Local.Exec with SIGCHLD as the worker sets it (childsignal.go).
func BenchmarkLocalExec(b *testing.B) {
	l := newTestLocal(b, nil)
	exec1 := func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			res, err := l.Exec(context.Background(), ExecRequest{Command: "true", Timeout: 10 * time.Second}, nil)
			if err != nil || !res.OK {
				b.Fatal(res, err)
			}
		}
	}
	b.Run("baseline_osexec", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := exec.Command(Shell, "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("local_exec", exec1)
	off := newTestLocal(b, func(c *Config) { c.Sandbox.Mode = sandbox.ModeOff })
	b.Run("local_exec_sandbox_off", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if res, err := off.Exec(context.Background(), ExecRequest{Command: "true", Timeout: 10 * time.Second}, nil); err != nil || !res.OK {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("local_exec_worker_signals", func(b *testing.B) {
		old, err := quietChildExits()
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _, _ = setSigaction(unix.SIGCHLD, &old) }()
		exec1(b)
	})
}
