package hostops

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
	b.Run("local_exec_worker_signals", func(b *testing.B) {
		old, err := quietChildExits()
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _, _ = setSigaction(unix.SIGCHLD, &old) }()
		exec1(b)
	})
}
