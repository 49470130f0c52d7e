package sandbox

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// BenchmarkCgroupSteps times each step a command's cgroup costs, to see
// which one to take off the command's path.
func BenchmarkCgroupSteps(b *testing.B) {
	tree, problems := OpenTree("", os.Getpid(), false)
	if tree == nil {
		b.Skip(problems)
	}
	defer tree.Close()
	b.Run("create_remove", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			c, err := tree.create()
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Remove(time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
	c, err := tree.New(DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Remove(time.Second)
	b.Run("set_limits", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := c.setLimits(DefaultLimits()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("enter_leave_v1", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := 0; i < b.N; i++ {
			if err := c.Enter(); err != nil {
				b.Fatal(err)
			}
			c.Leave()
		}
	})
	b.Run("stats", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			c.Stats()
		}
	})
	b.Run("kill_empty", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			c.Kill()
		}
	})
}
