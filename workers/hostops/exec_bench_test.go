package hostops

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkLocalExec: Local.Exec of `true` (pipes, process group, output
// capture, exit description) against os/exec running the same `sh -c true`
// in the same process. scripts/bench-style ratio: baseline first.
func BenchmarkLocalExec(b *testing.B) {
	l := newTestLocal(b, nil)
	b.Run("baseline_osexec", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := exec.Command(Shell, "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("local_exec", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			res, err := l.Exec(context.Background(), ExecRequest{Command: "true", Timeout: 10 * time.Second}, nil)
			if err != nil || !res.OK {
				b.Fatal(res, err)
			}
		}
	})
}
