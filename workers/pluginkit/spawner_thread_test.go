package pluginkit

import (
	"context"
	"testing"

	"golang.org/x/sys/unix"
)

// A spawner's thread is never the process's main thread: the exec sandbox
// moves spawner threads into commands' v1 cgroups, and the main thread (the
// thread-group leader) there would put the whole worker in the command's
// cgroup.procs, its memory (the leader owns the mm in v1 memcg) and its
// OOM kills. Go may run any goroutine on the main thread while the main
// goroutine waits, as it does here (the test runner's main goroutine).
func TestSpawnerNeverOnTheMainThread(t *testing.T) {
	for i := 0; i < 64; i++ {
		s := NewSpawner()
		var tid int
		if err := s.Do(context.Background(), func() error { tid = unix.Gettid(); return nil }); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if tid == unix.Getpid() {
			t.Fatalf("spawner %d runs on the main thread (tid %d)", i, tid)
		}
	}
}
