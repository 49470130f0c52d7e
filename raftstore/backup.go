package raftstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/svcd/svcd/raftstore/snapfile"
)

// MaxSnapshotPayload bounds a snapshot file's payload on restore: the state
// is metadata only (a few MB at most), so anything near this is not ours.
const MaxSnapshotPayload = 256 << 20

// Backup is a consistent snapshot of the state, ready to be written out.
type Backup struct {
	Header  snapfile.Header
	payload io.ReadCloser
}

// Write writes the snapshot file (header, payload, checksum) to w.
func (b *Backup) Write(w io.Writer) error { return snapfile.Write(w, b.Header, b.payload) }

// Close releases the snapshot.
func (b *Backup) Close() error { return b.payload.Close() }

// OpenBackup takes a raft snapshot now (the FSM's Snapshot+Persist, so
// writes go on meanwhile) and opens it. Every write acknowledged before the
// call is in it. When nothing was written since the last snapshot, that
// one is the current state and is opened instead.
func (n *Node) OpenBackup() (*Backup, error) {
	var (
		meta *raft.SnapshotMeta
		rc   io.ReadCloser
	)
	fut := n.raft.Snapshot()
	err := fut.Error()
	switch {
	case err == nil:
		meta, rc, err = fut.Open()
	case errors.Is(err, raft.ErrNothingNewToSnapshot):
		meta, rc, err = n.openLatestSnapshot()
	}
	if err != nil {
		return nil, fmt.Errorf("take raft snapshot: %w", err)
	}
	return &Backup{payload: rc, Header: snapfile.Header{
		ClusterID: n.ClusterID(), NodeID: n.cfg.NodeID,
		Index: meta.Index, Term: meta.Term, CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
		PayloadBytes: meta.Size,
	}}, nil
}

func (n *Node) openLatestSnapshot() (*raft.SnapshotMeta, io.ReadCloser, error) {
	list, err := n.snaps.List()
	if err != nil {
		return nil, nil, err
	}
	if len(list) == 0 {
		return nil, nil, errors.New("no snapshot in the store")
	}
	return n.snaps.Open(list[0].ID)
}

// decodeSnapshotState checks that a payload is a state this FSM can take,
// before raft is asked to restore it.
func decodeSnapshotState(payload []byte) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	var s State
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("snapshot payload is not svcd state: %v", err)
	}
	if dec.More() {
		return errors.New("snapshot payload has data after the state")
	}
	return nil
}

// ReadBackup reads and checks a whole snapshot file (snapfile.Read) and its
// payload; nothing is restored.
func ReadBackup(r io.Reader) (snapfile.Header, []byte, error) {
	h, payload, err := snapfile.Read(r, MaxSnapshotPayload)
	if err != nil {
		return h, nil, err
	}
	if err := decodeSnapshotState(payload); err != nil {
		return h, nil, err
	}
	return h, payload, nil
}

// ClusterMismatchError is a snapshot of another cluster, refused unless the
// restore is forced.
type ClusterMismatchError struct {
	Snapshot, Cluster string
}

func (e *ClusterMismatchError) Error() string {
	return fmt.Sprintf("the snapshot is of cluster %s, this is cluster %s: nothing changed (force the restore to replace this cluster's state with it anyway; the cluster keeps its id %s)",
		e.Snapshot, e.Cluster, e.Cluster)
}

// RestoreBackup makes a checked snapshot the state of the running cluster
// (raft's user-snapshot Restore: the leader takes it and sends it to the
// followers). Only the leader can; the state is unchanged on any error. A
// snapshot of another cluster (its header's cluster_id) is refused with a
// ClusterMismatchError unless force is set. The restored state keeps this
// cluster's id either way.
func (n *Node) RestoreBackup(ctx context.Context, h snapfile.Header, payload []byte, force bool) error {
	if err := decodeSnapshotState(payload); err != nil {
		return err
	}
	if !n.IsLeader() {
		return ErrNotLeader
	}
	id, err := n.EnsureClusterID(ctx)
	if err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, ErrNotLeader) {
			return ErrNotLeader
		}
		return fmt.Errorf("cluster id: %w", err)
	}
	if h.ClusterID != "" && h.ClusterID != id && !force {
		return &ClusterMismatchError{Snapshot: h.ClusterID, Cluster: id}
	}
	payload, err = withClusterID(payload, id)
	if err != nil {
		return err
	}
	timeout := n.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: h.Index, Term: h.Term, Size: int64(len(payload))}
	if err := n.raft.Restore(meta, bytes.NewReader(payload), timeout); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return ErrNotLeader
		}
		return fmt.Errorf("raft restore: %w", err)
	}
	return nil
}

// RestoreDataDir writes a checked snapshot into a fresh data dir (no raft
// state yet) as that node's only snapshot, with a configuration of this
// node alone: started on it, the node loads the state and leads a
// single-node cluster of its own (others can join it). address is the raft
// address the node will advertise (empty: the single-node in-memory one).
func RestoreDataDir(dataDir, nodeID, address string, h snapfile.Header, payload []byte) error {
	if err := decodeSnapshotState(payload); err != nil {
		return err
	}
	if nodeID == "" {
		nodeID = "node1"
	}
	if address == "" {
		address = "inmem:" + nodeID
	}
	for _, name := range []string{"raft.db", "snapshots"} {
		if _, err := os.Stat(filepath.Join(dataDir, name)); err == nil {
			return fmt.Errorf("data dir %s already holds raft state (%s): restore into a fresh data dir, or into the running daemon with svcctl snapshot restore", dataDir, name)
		}
	}
	if f, ok, err := ReadDataFormat(dataDir); err != nil {
		return err
	} else if ok && f.FormatVersion > DataFormatVersion {
		return &FormatError{Dir: dataDir, Found: f.FormatVersion, WrittenBy: f.WrittenBy}
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	format, err := ensureDataFormat(dataDir, VersionOptions{})
	if err != nil {
		return err
	}
	if h.ClusterID != "" && format.ClusterID != h.ClusterID {
		format.ClusterID = h.ClusterID
		if err := writeDataFormat(dataDir, format); err != nil {
			return err
		}
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dataDir, 2, hclog.NewNullLogger())
	if err != nil {
		return fmt.Errorf("open snapshot store: %w", err)
	}
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(nodeID), Address: raft.ServerAddress(address)}}}
	// The file store encodes the peers through a transport; nothing is sent.
	_, trans := raft.NewInmemTransport(raft.ServerAddress(address))
	defer trans.Close()
	sink, err := snaps.Create(raft.SnapshotVersionMax, h.Index, h.Term, conf, h.Index, trans)
	if err != nil {
		return fmt.Errorf("create snapshot: %w", err)
	}
	if _, err := sink.Write(payload); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("write snapshot: %w", err)
	}
	return sink.Close()
}
