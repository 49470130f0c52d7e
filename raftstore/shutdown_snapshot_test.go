package raftstore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// snapshotIndexes lists the last indexes of the snapshots in dir.
func snapshotIndexes(t *testing.T, dir string) []uint64 {
	t.Helper()
	metas, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "meta.json"))
	var out []uint64
	for _, m := range metas {
		raw, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ Index uint64 }
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		out = append(out, meta.Index)
	}
	return out
}

// A node shut down with many entries since its last snapshot takes one, so
// the next start restores it instead of replaying them; with a few it does
// not (they replay in no time). Either way the state survives.
func TestShutdownSnapshotsWhenFarBehind(t *testing.T) {
	for _, c := range []struct {
		writes int
		snap   bool
	}{{10, false}, {shutdownSnapshotAfter + 20, true}} {
		dir := t.TempDir()
		n := openTestNode(t, dir)
		ctx := context.Background()
		for i := 0; i < c.writes; i++ {
			if _, err := n.Apply(ctx, CmdTickRecord, TickRecord{Outcome: "x"}); err != nil {
				t.Fatal(err)
			}
		}
		applied := n.AppliedIndex()
		if err := n.Shutdown(); err != nil {
			t.Fatal(err)
		}
		idx := snapshotIndexes(t, dir)
		if got := len(idx) > 0 && idx[len(idx)-1] >= applied; got != c.snap {
			t.Fatalf("%d writes: snapshots at %v, applied %d; want a snapshot there: %v", c.writes, idx, applied, c.snap)
		}
		n = openTestNode(t, dir)
		if err := n.Barrier(ctx); err != nil {
			t.Fatal(err)
		}
		var total int64
		n.Read(func(s *State) { total = s.Jobs.Ticks.Total })
		n.Shutdown()
		if total != int64(c.writes) {
			t.Fatalf("after restart %d tick records, want %d", total, c.writes)
		}
	}
}
