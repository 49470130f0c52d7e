package raftstore

import (
	"path/filepath"
	"testing"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// A newcomer stopped mid-join has stored the leader's term but no
// configuration: it has state, is not (yet) a member, and must be told apart
// from a node holding a foreign cluster's configuration (which is refused).
func TestHalfJoinedNodeHasStateButNoConfiguration(t *testing.T) {
	dir := t.TempDir()
	store, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	// What raft writes when the first AppendEntries from a leader arrives.
	if err := store.SetUint64([]byte("CurrentTerm"), 4); err != nil {
		t.Fatal(err)
	}
	store.Close()

	n, err := Open(Config{NodeID: "w", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	if !n.HadState() || n.IsMember() || n.HasConfiguration() {
		t.Fatalf("half-joined: HadState=%v IsMember=%v HasConfiguration=%v, want true false false", n.HadState(), n.IsMember(), n.HasConfiguration())
	}

	b, err := Open(Config{NodeID: "b", DataDir: t.TempDir(), Bootstrap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	if !b.HasConfiguration() {
		t.Fatal("a bootstrapped node has a configuration")
	}
}
