package hostops

import (
	"context"
	"os/exec"
	"sort"
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

// BenchmarkLocalExecSandboxOnOff: Local.Exec of `true` with the sandbox on
// (cgroup, Landlock-restricted spawner, scratch directory) and off,
// alternated per sample so that load hits both alike; reports each side's
// p50 and the difference. Run with -cpu 1 (the worker's single P).
func BenchmarkLocalExecSandboxOnOff(b *testing.B) {
	on := newTestLocal(b, nil)
	off := newTestLocal(b, func(c *Config) { c.Sandbox.Mode = sandbox.ModeOff })
	run := func(l *Local) time.Duration {
		t0 := time.Now()
		res, err := l.Exec(context.Background(), ExecRequest{Command: "true", Timeout: 10 * time.Second}, nil)
		if err != nil || !res.OK {
			b.Fatal(res, err)
		}
		return time.Since(t0)
	}
	for i := 0; i < 10; i++ {
		run(on)
		run(off)
	}
	ons, offs := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		offs = append(offs, run(off))
		ons = append(ons, run(on))
		// The sandbox hands its cgroup and spawner back after the answer,
		// in the background; in a worker of its own that runs while the
		// supervisor answers, here it would land on the next sample of the
		// other side (one P), so it is waited for outside the timing.
		b.StopTimer()
		on.sandbox.cleanup.Wait()
		b.StartTimer()
	}
	p50 := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2].Microseconds())
	}
	onP, offP := p50(ons), p50(offs)
	b.ReportMetric(onP, "on_p50_us")
	b.ReportMetric(offP, "off_p50_us")
	b.ReportMetric(onP-offP, "added_p50_us")
}
