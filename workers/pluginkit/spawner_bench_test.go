package pluginkit

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkSpawnerStart: starting and waiting for `true` through the pinned
// spawner thread against starting it from the calling goroutine.
func BenchmarkSpawnerStart(b *testing.B) {
	sp := NewSpawner()
	defer sp.Close()
	b.Run("baseline_direct", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			cmd := exec.Command("/bin/true")
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			_ = cmd.Wait()
		}
	})
	b.Run("spawner", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			cmd := exec.Command("/bin/true")
			if err := sp.Do(context.Background(), cmd.Start); err != nil {
				b.Fatal(err)
			}
			_ = cmd.Wait()
		}
	})
}
