package raftstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

func openTestNode(t testing.TB, dir string) *Node {
	t.Helper()
	n, err := Open(Config{DataDir: dir, Bootstrap: true})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestApplyPersistsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	n := openTestNode(t, dir)
	ctx := context.Background()
	v, err := n.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: ModePaused, RequestedBy: "test", Reason: "maintenance"})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got := v.(SystemState); got.Mode != ModePaused || got.Version != 1 || got.UpdatedAt.IsZero() {
		t.Fatalf("apply result = %+v", got)
	}
	if err := n.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	n = openTestNode(t, dir)
	defer n.Shutdown()
	if err := n.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	var got SystemState
	n.Read(func(s *State) { got = s.System })
	if got.Mode != ModePaused || got.Reason != "maintenance" || got.RequestedBy != "test" {
		t.Fatalf("after restart system = %+v, want paused by test", got)
	}
}

func TestRefusedCommandChangesNothing(t *testing.T) {
	n := openTestNode(t, t.TempDir())
	defer n.Shutdown()
	_, err := n.Apply(context.Background(), CmdSetSystemMode, SetSystemMode{Mode: "sleeping"})
	var ce *CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want CommandError", err)
	}
	if _, err := n.Apply(context.Background(), "no.such.command", struct{}{}); !errors.As(err, &ce) {
		t.Fatalf("unknown command err = %v", err)
	}
	n.Read(func(s *State) {
		if s.System.Mode != ModeRunning || s.System.Version != 0 {
			t.Fatalf("state changed by a refused command: %+v", s.System)
		}
	})
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	f := newFSM()
	f.state.System = SystemState{Mode: ModeDraining, RequestedBy: "op", Reason: "upgrade", UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC), Version: 7}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := newFSM()
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if g.state.System != f.state.System {
		t.Fatalf("restored %+v, want %+v", g.state.System, f.state.System)
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader([]byte("{not json")))); err == nil {
		t.Fatal("restore of garbage succeeded")
	}
	if g.state.System != f.state.System {
		t.Fatal("failed restore replaced the state")
	}
}

type memSink struct{ bytes.Buffer }

func (m *memSink) ID() string    { return "mem" }
func (m *memSink) Cancel() error { return nil }
func (m *memSink) Close() error  { return nil }

// TestRestartFromRaftSnapshot takes a real raft snapshot, writes more after
// it, and checks a restarted node restores the snapshot and replays the rest.
func TestRestartFromRaftSnapshot(t *testing.T) {
	dir := t.TempDir()
	n := openTestNode(t, dir)
	ctx := context.Background()
	if _, err := n.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: ModeDraining, Reason: "in snapshot"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if _, err := n.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: ModePaused, Reason: "after snapshot"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	n = openTestNode(t, dir)
	defer n.Shutdown()
	if err := n.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	n.Read(func(s *State) {
		if s.System.Mode != ModePaused || s.System.Reason != "after snapshot" || s.System.Version != 2 {
			t.Fatalf("after restore+replay: %+v", s.System)
		}
	})
}

func TestStateVersionMovesWithEveryChange(t *testing.T) {
	n := openTestNode(t, t.TempDir())
	defer n.Shutdown()
	ctx := context.Background()
	if err := n.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	var mode string
	before := n.ReadVersioned(func(s *State) { mode = s.System.Mode })
	if again := n.ReadVersioned(func(*State) {}); again != before || n.StateVersion() != before {
		t.Fatalf("a read moved the version: %d then %d", before, again)
	}
	if _, err := n.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: ModePaused, RequestedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	// Acknowledged: the next read sees a new version and the new state.
	after := n.ReadVersioned(func(s *State) { mode = s.System.Mode })
	if after == before || n.StateVersion() != after || mode != ModePaused {
		t.Fatalf("after a write: version %d (before %d), mode %q", after, before, mode)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if n.StateVersion() != after {
		t.Fatalf("a snapshot moved the version")
	}
}

// Each acknowledged write is in the node's AppliedIndex at once: the index
// answered with a write (X-Svcd-State-Index) is at least the write's own,
// so two writes in a row answer two rising indexes. raft's own
// AppliedIndex moves in its main loop after the FSM goroutine may already
// have acknowledged the write, and read equal for two writes (seen as
// TestWriteAnswersCarryTheStateIndex: "pause 16, resume 16").
func TestAppliedIndexCoversEachAcknowledgedWrite(t *testing.T) {
	n := openTestNode(t, t.TempDir())
	defer n.Shutdown()
	ctx := context.Background()
	var last uint64
	for i := 0; i < 300; i++ {
		mode := ModePaused
		if i%2 == 1 {
			mode = ModeRunning
		}
		if _, err := n.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: mode, RequestedBy: "test"}); err != nil {
			t.Fatal(err)
		}
		got := n.AppliedIndex()
		if got <= last {
			t.Fatalf("write %d acknowledged with AppliedIndex %d, not above the previous write's %d", i, got, last)
		}
		last = got
	}
}
