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
	"strings"
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
	key     []byte // the node's SnapshotKey: the file's MAC (format 2)
}

// Write writes the snapshot file (header, payload, checksum) to w.
func (b *Backup) Write(w io.Writer) error { return snapfile.Write(w, b.Header, b.payload, b.key) }

// Close releases the snapshot.
func (b *Backup) Close() error { return b.payload.Close() }

// OpenBackup takes a raft snapshot now (the FSM's Snapshot+Persist, so
// writes go on meanwhile) and opens it. Every write acknowledged before the
// call is in it. When nothing was written since the last snapshot, that
// one is the current state and is opened instead.
func (n *Node) OpenBackup(ctx context.Context) (*Backup, error) {
	var (
		meta *raft.SnapshotMeta
		rc   io.ReadCloser
		err  error
	)
	for {
		fut := n.raft.Snapshot()
		err = fut.Error()
		switch {
		case err == nil:
			meta, rc, err = fut.Open()
		case errors.Is(err, raft.ErrNothingNewToSnapshot):
			meta, rc, err = n.openLatestSnapshot()
		case configurationNotApplied(err):
			// Right after a member joined, raft refuses a snapshot until the
			// FSM has applied that configuration entry ("cannot take snapshot
			// now, wait until the configuration entry at 19 has been applied
			// (have applied 18)"). Waiting alone does not get there: the FSM
			// moves on with the next entry it applies, which may never come
			// (a single node after AddNonvoter waited forever). On the leader
			// a barrier is that entry, as RestoreBackup does; a standby gets
			// one with the leader's next write. Then ask again.
			if ctx.Err() != nil {
				return nil, fmt.Errorf("take raft snapshot: %w (%v)", err, ctx.Err())
			}
			if n.IsLeader() {
				_ = n.Barrier(ctx)
			} else {
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
			continue
		}
		break
	}
	if err != nil {
		return nil, fmt.Errorf("take raft snapshot: %w", err)
	}
	return &Backup{payload: rc, key: n.cfg.SnapshotKey, Header: snapfile.Header{
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
// before raft is asked to restore it: svcd state, valid as the commands
// would have made it (snapshot_validate.go).
func decodeSnapshotState(payload []byte) error {
	_, err := decodeRestoredState(payload)
	return err
}

func decodeRestoredState(payload []byte) (*State, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	var s State
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("snapshot payload is not svcd state: %v", err)
	}
	// Token, not More: More says false before a stray '}' or ']'.
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("snapshot payload has data after the state")
	}
	if err := validateState(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// configurationNotApplied: raft's (unexported, text-only) refusal to take a
// snapshot while its latest configuration entry is still being applied.
func configurationNotApplied(err error) bool {
	return err != nil && strings.Contains(err.Error(), "wait until the configuration entry")
}

// ReadBackup reads and checks a whole snapshot file (snapfile.Read) and its
// payload; nothing is restored.
//
// key is the snapshot MAC key: a format-2 file whose MAC does not match is
// snapfile.ErrTampered. Without a key (an offline restore that found no
// cluster key) nothing is authenticated: authenticated is false and the
// caller must say so.
func ReadBackup(r io.Reader, key []byte) (h snapfile.Header, payload []byte, authenticated bool, err error) {
	if len(key) == 0 {
		h, payload, err = snapfile.Read(r, MaxSnapshotPayload)
	} else {
		h, payload, authenticated, err = snapfile.ReadAuth(r, MaxSnapshotPayload, key)
	}
	if err != nil {
		return h, nil, false, err
	}
	if err := decodeSnapshotState(payload); err != nil {
		return h, nil, false, err
	}
	return h, payload, authenticated, nil
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
// ClusterMismatchError unless opts.Force is set. The restored state keeps
// this cluster's id and its live members and leader addresses either way,
// and, unless opts.Force, the revocations made after the snapshot was
// taken (restore_pairing.go); the report says what changed in credentials.
func (n *Node) RestoreBackup(ctx context.Context, h snapfile.Header, payload []byte, opts RestoreOptions) (RestoreReport, error) {
	snap, err := decodeRestoredState(payload)
	if err != nil {
		return RestoreReport{}, err
	}
	if !n.IsLeader() {
		return RestoreReport{}, ErrNotLeader
	}
	id, err := n.EnsureClusterID(ctx)
	if err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, ErrNotLeader) {
			return RestoreReport{}, ErrNotLeader
		}
		return RestoreReport{}, fmt.Errorf("cluster id: %w", err)
	}
	if h.ClusterID != "" && h.ClusterID != id && !opts.Force {
		return RestoreReport{}, &ClusterMismatchError{Snapshot: h.ClusterID, Cluster: id}
	}
	// raft refuses a restore while its latest configuration entry (a member
	// that has just joined) is not yet applied; a barrier applies everything
	// committed before it, that entry included. It also makes the live view
	// read below current.
	if err := n.Barrier(ctx); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return RestoreReport{}, ErrNotLeader
		}
		return RestoreReport{}, fmt.Errorf("raft barrier before the restore: %w", err)
	}
	var live liveRestoreView
	n.Read(func(s *State) { live = takeLiveView(s) })
	report := mergeRestoredPairing(&snap.Pairing, live, h, opts)
	payload, err = withLiveSections(payload, id, snap.Pairing, live.cluster)
	if err != nil {
		return RestoreReport{}, err
	}
	timeout := n.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: h.Index, Term: h.Term, Size: int64(len(payload))}
	if err := n.raft.Restore(meta, bytes.NewReader(payload), timeout); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return RestoreReport{}, ErrNotLeader
		}
		return RestoreReport{}, fmt.Errorf("raft restore: %w", err)
	}
	return report, nil
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

// SnapshotKey is the MAC key of this node's snapshot files (Config).
func (n *Node) SnapshotKey() []byte { return n.cfg.SnapshotKey }
