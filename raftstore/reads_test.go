package raftstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A restarted node's first read: ReadIndex then WaitApplied must show every
// write acknowledged before the restart, whether it comes back from the
// snapshot, from the log after it, or both; and must not wait for a command
// that never comes when the last entries are a snapshot and a barrier.
func TestReadIndexCoversAcknowledgedWritesAfterRestart(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		beforeSnap, afterSnap int
	}{
		{"log only", 0, 300},
		{"snapshot only", 300, 0},
		{"snapshot and log", 200, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			n := openTestNode(t, dir)
			ctx := context.Background()
			write := func(k int) {
				for i := 0; i < k; i++ {
					if _, err := n.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: []string{ModePaused, ModeRunning}[i%2]}); err != nil {
						t.Fatal(err)
					}
				}
			}
			write(tc.beforeSnap)
			if tc.beforeSnap > 0 {
				if err := n.Snapshot(); err != nil {
					t.Fatal(err)
				}
			}
			write(tc.afterSnap)
			want := uint64(tc.beforeSnap + tc.afterSnap)
			if err := n.Shutdown(); err != nil {
				t.Fatal(err)
			}
			n = openTestNode(t, dir)
			defer n.Shutdown()
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			idx, err := n.ReadIndex(rctx)
			if err != nil {
				t.Fatalf("read index: %v", err)
			}
			if err := n.WaitApplied(rctx, idx); err != nil {
				t.Fatalf("wait for index %d (FSM's own %d, raft applied %d): %v", idx, n.fsm.applied.Load(), n.raft.AppliedIndex(), err)
			}
			var got uint64
			n.Read(func(s *State) { got = s.System.Version })
			if got != want {
				t.Fatalf("first consistent read after restart: version %d, want %d", got, want)
			}
			// Idle now, the last entry is the read's barrier: later reads
			// answer at once.
			quick, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel2()
			if err := n.WaitApplied(quick, n.raft.CommitIndex()); err != nil {
				t.Fatalf("idle node waits for its own commit index: %v", err)
			}
		})
	}
}

// A standby asked to reach an index it cannot reach answers ErrCatchingUp
// when its caller's deadline passes, and a node that is not the leader
// gives no read index of its own.
func TestWaitAppliedGivesUpAtTheDeadline(t *testing.T) {
	n := openTestNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := n.WaitApplied(ctx, n.raft.LastIndex()+100); !errors.Is(err, ErrCatchingUp) {
		t.Fatalf("err = %v, want ErrCatchingUp", err)
	}
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.ReadIndex(context.Background()); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("read index on a stopped node: %v, want ErrNotLeader", err)
	}
}
