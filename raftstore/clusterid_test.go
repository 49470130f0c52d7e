package raftstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

func backupOf(t *testing.T, n *Node) ([]byte, []byte) {
	t.Helper()
	b, err := n.OpenBackup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var file bytes.Buffer
	if err := b.Write(&file); err != nil {
		t.Fatal(err)
	}
	_, payload, _, err := ReadBackup(bytes.NewReader(file.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	return file.Bytes(), payload
}

// A data dir whose state has no cluster id (made before it was replicated)
// gets its FORMAT id on the first EnsureClusterID, keeps it across a
// restart, and a second proposal does not change it.
func TestClusterIDRecordedOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	n := openTestNode(t, dir)
	ctx := context.Background()
	if _, err := n.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: ModePaused, RequestedBy: "test", Reason: "old dir"}); err != nil {
		t.Fatal(err)
	}
	f, _, err := ReadDataFormat(dir)
	if err != nil || len(f.ClusterID) != 32 {
		t.Fatalf("FORMAT: %+v %v", f, err)
	}
	if id := n.ReplicatedClusterID(); id != "" {
		t.Fatalf("state has cluster id %q before any leader recorded one", id)
	}
	id, err := n.EnsureClusterID(ctx)
	if err != nil || id != f.ClusterID || n.ClusterID() != id || n.ReplicatedClusterID() != id {
		t.Fatalf("EnsureClusterID = %q %v, want FORMAT's %q", id, err, f.ClusterID)
	}
	if v, err := n.Apply(ctx, CmdClusterID, ClusterIDRecord{ID: "another"}); err != nil || v != id {
		t.Fatalf("second id proposal: %v %v, want the first id kept", v, err)
	}
	if _, err := n.Apply(ctx, CmdClusterID, ClusterIDRecord{}); err == nil {
		t.Fatal("an empty cluster id was accepted")
	}
	n.Shutdown()
	n = openTestNode(t, dir)
	defer n.Shutdown()
	if err := n.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if got := n.ReplicatedClusterID(); got != id {
		t.Fatalf("after restart cluster id %q, want %q", got, id)
	}
	if file, _ := backupOf(t, n); !bytes.Contains(file, []byte(id)) {
		t.Fatal("snapshot header does not carry the cluster id")
	}
}

// A snapshot of another cluster is refused, naming both ids, and changes
// nothing; forced, it is restored and the cluster keeps its own id.
func TestRestoreBackupRefusesAnotherCluster(t *testing.T) {
	ctx := context.Background()
	a := openTestNode(t, t.TempDir())
	defer a.Shutdown()
	b := openTestNode(t, t.TempDir())
	defer b.Shutdown()
	for _, n := range []*Node{a, b} {
		if _, err := n.EnsureClusterID(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if a.ClusterID() == b.ClusterID() {
		t.Fatal("two clusters share an id")
	}
	if _, err := a.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: ModePaused, RequestedBy: "test", Reason: "cluster a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: ModeDraining, RequestedBy: "test", Reason: "cluster b"}); err != nil {
		t.Fatal(err)
	}
	file, _ := backupOf(t, b)
	hdr, payload, _, err := ReadBackup(bytes.NewReader(file), nil)
	if err != nil {
		t.Fatal(err)
	}
	reason := func() string {
		var r string
		a.Read(func(s *State) { r = s.System.Reason })
		return r
	}
	_, err = a.RestoreBackup(ctx, hdr, payload, RestoreOptions{})
	var mm *ClusterMismatchError
	if !errors.As(err, &mm) || mm.Snapshot != b.ClusterID() || mm.Cluster != a.ClusterID() {
		t.Fatalf("foreign restore: %v", err)
	}
	if reason() != "cluster a" {
		t.Fatalf("refused restore changed the state: %q", reason())
	}
	idA := a.ClusterID()
	if _, err := a.RestoreBackup(ctx, hdr, payload, RestoreOptions{Force: true}); err != nil {
		t.Fatalf("forced restore: %v", err)
	}
	if reason() != "cluster b" || a.ClusterID() != idA {
		t.Fatalf("after forced restore: reason %q, id %q (want cluster b, %q)", reason(), a.ClusterID(), idA)
	}
	// Its own snapshot goes back without force.
	own, _ := backupOf(t, a)
	h2, p2, _, err := ReadBackup(io.Reader(bytes.NewReader(own)), nil)
	if err != nil || h2.ClusterID != idA {
		t.Fatalf("own snapshot header %+v %v", h2, err)
	}
	if _, err := a.RestoreBackup(ctx, h2, p2, RestoreOptions{}); err != nil {
		t.Fatalf("own snapshot: %v", err)
	}
}

func TestWithClusterID(t *testing.T) {
	for _, in := range []string{`{"system":{"mode":"running"}}`, `{"cluster":null}`, `{"cluster":{"id":"old","members":{}}}`} {
		out, err := withClusterID([]byte(in), "new")
		if err != nil || decodeSnapshotState(out) != nil || !bytes.Contains(out, []byte(`"id":"new"`)) {
			t.Fatalf("%s → %s %v", in, out, err)
		}
	}
	if _, err := withClusterID([]byte(`{"cluster":[1]}`), "x"); err == nil {
		t.Fatal("a cluster that is not an object was accepted")
	}
}

// FuzzWithClusterID: any payload that is svcd state comes out as svcd state
// with the id set, and a cluster id of its own is the one set.
func FuzzWithClusterID(f *testing.F) {
	for _, s := range []string{`{}`, `{"cluster":{"id":"a","members":{"n1":{"node_id":"n1"}}}}`, `{"cluster":null,"system":{"mode":"paused"}}`, `{"cluster":{}}`, `[]`, `{"cluster":"x"}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		if decodeSnapshotState(payload) != nil {
			return
		}
		out, err := withClusterID(payload, "cid")
		if err != nil {
			return // state whose cluster is not an object: refused, not mangled
		}
		if err := decodeSnapshotState(out); err != nil {
			t.Fatalf("%s → %s: %v", payload, out, err)
		}
		var s State
		if err := json.Unmarshal(out, &s); err != nil || s.Cluster.ID != "cid" {
			t.Fatalf("%s → %s: id %q %v", payload, out, s.Cluster.ID, err)
		}
	})
}
