package e2e

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/raftstore/snapfile"
)

// clusterID is GET /v1/cluster's cluster_id.
func clusterID(t testing.TB, d *harness.Daemon) string {
	t.Helper()
	var env struct {
		Data struct {
			ClusterID string `json:"cluster_id"`
		} `json:"data"`
	}
	resp := d.Do("GET", "/v1/cluster", nil)
	if resp.Status != 200 {
		t.Fatalf("GET /v1/cluster: %d %s", resp.Status, resp.Body)
	}
	resp.Decode(t, &env)
	return env.Data.ClusterID
}

func snapshotOf(t *testing.T, d *harness.Daemon) ([]byte, snapfile.Header) {
	t.Helper()
	resp := d.DoAuth("GET", "/v1/snapshot", nil)
	if resp.Status != 200 {
		t.Fatalf("GET /v1/snapshot: %d %.300s", resp.Status, resp.Body)
	}
	h, _, err := snapfile.Read(bytes.NewReader(resp.Body), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Body, h
}

// A snapshot of another cluster is refused by restore with 409
// cluster_mismatch naming both ids, and changes nothing; with force=true it
// is restored, and the cluster keeps its own id.
func TestSnapshotForeignClusterRefused(t *testing.T) {
	a := harness.Start(t, harness.Options{})
	b := harness.Start(t, harness.Options{})
	idA, idB := clusterID(t, a), clusterID(t, b)
	if len(idA) != 32 || len(idB) != 32 || idA == idB {
		t.Fatalf("cluster ids %q and %q: want two different ids", idA, idB)
	}
	if r := b.Do("POST", "/v1/system/pause", map[string]string{"reason": "cluster b"}); r.Status != 200 {
		t.Fatalf("pause b: %d %s", r.Status, r.Body)
	}
	if r := a.Do("POST", "/v1/system/drain", map[string]string{"reason": "cluster a"}); r.Status != 200 {
		t.Fatalf("drain a: %d %s", r.Status, r.Body)
	}
	fileB, hB := snapshotOf(t, b)
	if hB.ClusterID != idB {
		t.Fatalf("b's snapshot header cluster_id %q, GET /v1/cluster says %q", hB.ClusterID, idB)
	}
	before := sysStateOf(t, a)

	resp := a.DoAuth("POST", "/v1/snapshot/restore", fileB, "Content-Type: "+snapType)
	wantError(t, resp, 409, "cluster_mismatch")
	if body := string(resp.Body); !strings.Contains(body, idA) || !strings.Contains(body, idB) {
		t.Fatalf("refusal does not name both ids: %s", body)
	}
	if now := sysStateOf(t, a); now.Version != before.Version || now.Reason != before.Reason {
		t.Fatalf("refused restore changed the state: %+v → %+v", before, now)
	}
	wantError(t, a.DoAuth("POST", "/v1/snapshot/restore?force=maybe", fileB, "Content-Type: "+snapType), 422, "invalid_field")

	forced := a.DoAuth("POST", "/v1/snapshot/restore?force=true", fileB, "Content-Type: "+snapType)
	if forced.Status != 200 || !strings.Contains(string(forced.Body), `"forced":true`) {
		t.Fatalf("forced restore: %d %s", forced.Status, forced.Body)
	}
	if now := sysStateOf(t, a); now.Reason != "cluster b" {
		t.Fatalf("forced restore did not bring b's state: %+v", now)
	}
	if got := clusterID(t, a); got != idA {
		t.Fatalf("after the forced restore cluster id %q, want a's own %q", got, idA)
	}
	if _, h := snapshotOf(t, a); h.ClusterID != idA {
		t.Fatalf("a's snapshot after the forced restore carries %q, want %q", h.ClusterID, idA)
	}
}

// A data dir made before the cluster id was replicated (its raft state has
// none) gets one on its first start as leader: its own FORMAT id, shown by
// GET /v1/cluster, carried by its snapshots, kept across a restart; its
// state is untouched.
func TestClusterIDUpgradePath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "old")
	n, err := raftstore.Open(raftstore.Config{DataDir: dir, Bootstrap: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Apply(ctx, raftstore.CmdSetSystemMode, raftstore.SetSystemMode{Mode: raftstore.ModePaused, RequestedBy: "old", Reason: "made before"}); err != nil {
		t.Fatal(err)
	}
	if id := n.ReplicatedClusterID(); id != "" {
		t.Fatalf("the old dir's state already has a cluster id %q", id)
	}
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	format, ok, err := raftstore.ReadDataFormat(dir)
	if err != nil || !ok || format.ClusterID == "" {
		t.Fatalf("FORMAT: %+v %v %v", format, ok, err)
	}
	d := harness.Start(t, harness.Options{DataDir: dir})
	if st := sysStateOf(t, d); st.Reason != "made before" {
		t.Fatalf("state of the old dir: %+v", st)
	}
	if got := clusterID(t, d); got != format.ClusterID {
		t.Fatalf("cluster id %q, want the data dir's %q", got, format.ClusterID)
	}
	if _, h := snapshotOf(t, d); h.ClusterID != format.ClusterID {
		t.Fatalf("snapshot cluster id %q, want %q", h.ClusterID, format.ClusterID)
	}
	d.Restart()
	if got := clusterID(t, d); got != format.ClusterID {
		t.Fatalf("after restart cluster id %q, want %q", got, format.ClusterID)
	}
}
