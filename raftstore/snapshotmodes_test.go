package raftstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Snapshots hold pairing state: issue 32 found state.bin 0644 under a
// 0755 snapshots directory, readable by a command of another user. Every
// snapshot file is 0600 and the directory 0700.
func TestSnapshotFilesArePrivate(t *testing.T) {
	dir := t.TempDir()
	n := openTestNode(t, dir)
	ctx := context.Background()
	if _, err := n.Apply(ctx, CmdTickRecord, TickRecord{Outcome: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	snaps := filepath.Join(dir, "snapshots")
	if st, err := os.Stat(snaps); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("snapshots directory: %v %v, want 0700", st.Mode(), err)
	}
	files, _ := filepath.Glob(filepath.Join(snaps, "*", "*"))
	if len(files) == 0 {
		t.Fatal("no snapshot was written")
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.IsDir() && st.Mode().Perm() != 0o700 || !st.IsDir() && st.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v", f, st.Mode())
		}
	}
}
