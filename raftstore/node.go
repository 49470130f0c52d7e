// Package raftstore is svcd's durable state: a hashicorp/raft node whose FSM
// holds State, logged in raft-boltdb/v2 with file snapshots under the data dir.
// Every write is a Command applied on the leader and acknowledged only after
// raft commits it; reads come from the FSM.
package raftstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/svcd/svcd/shared/clustertls"
	"github.com/svcd/svcd/shared/logging"
)

// Config says where a node keeps its data and how it talks to peers.
type Config struct {
	// NodeID names this node in the cluster (default "node1").
	NodeID string
	// DataDir holds raft.db (log and stable store) and snapshots/.
	DataDir string
	// RaftAddr is the TCP address raft peers use. Empty means a single node
	// with an in-memory transport: nothing listens, nothing can join.
	RaftAddr string
	// RaftAdvertise is the raft address peers dial (default: RaftAddr, which
	// must then not be a wildcard).
	RaftAdvertise string
	// ClusterKey authenticates raft traffic between nodes (required with
	// RaftAddr): every connection starts with a mutual HMAC handshake.
	ClusterKey []byte
	// TLS, when set, runs every raft connection (and forwarded API calls,
	// ForwardListener/DialForward) over mutual TLS with the cluster CA;
	// nil keeps plain TCP (docs/ha.md, TLS).
	TLS *clustertls.Holder
	// Bootstrap makes a node with no existing state form a cluster of itself.
	Bootstrap bool
	// Timings; zero means the tuned defaults in DefaultTimings.
	Timings Timings
	// SnapshotKey is the MAC key of snapshot files (keyderive.SnapshotAuth
	// of the cluster key): GET /v1/snapshot writes format 2 with it, a
	// restore checks it. Empty: format 1 files (not authenticated).
	SnapshotKey []byte
	// ApplyTimeout bounds one write when the caller's context has no deadline.
	ApplyTimeout time.Duration
	Logger       hclog.Logger
	// AllowDowngrade opens a data dir last written by a newer minor
	// release (versions.go).
	AllowDowngrade bool
}

// Node is one raft member with its FSM.
type Node struct {
	cfg       Config
	raft      *raft.Raft
	fsm       *fsm
	store     *raftboltdb.BoltStore
	transport raft.Transport
	closeT    func() error
	logger    hclog.Logger
	hadState  bool // the data dir held raft state when the node opened
	snaps     raft.SnapshotStore
	// leaderChanges counts leader observations (progress.go).
	leaderChanges atomic.Uint64
	stopWatch     func()
	format        DataFormat       // the data dir's FORMAT (format.go)
	stream        *authStreamLayer // nil with the in-memory transport
	refused       *refusals
	// reads gates the leader's first read of a term on a barrier (reads.go).
	reads readGate
	// verifier shares VerifyLeader rounds between concurrent reads.
	verifier verifier
	// readThrough is the highest index fsmThrough found the FSM through
	// although its last command is older (reads.go).
	readThrough atomic.Uint64
}

// ErrNotLeader is returned by Apply on a node that is not the leader.
var ErrNotLeader = errors.New("this node is not the raft leader")

// CommandError is a command the FSM refused; the state is unchanged.
type CommandError struct{ Err error }

func (e *CommandError) Error() string { return e.Err.Error() }
func (e *CommandError) Unwrap() error { return e.Err }

// Open starts a raft node on cfg.DataDir, bootstrapping a fresh single-node
// cluster when asked and when there is no existing state.
func Open(cfg Config) (*Node, error) {
	if cfg.NodeID == "" {
		cfg.NodeID = "node1"
	}
	if cfg.ApplyTimeout <= 0 {
		cfg.ApplyTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	// The format check comes before raft.db is touched: a newer layout is
	// refused before this binary could rewrite any of it.
	format, err := ensureDataFormat(cfg.DataDir, VersionOptions{AllowDowngrade: cfg.AllowDowngrade, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	// raft logs *Raft and configurations as fields: as strings in JSON too.
	logger := logging.Stringers(cfg.Logger.Named("raft"))

	store, err := openLogStore(filepath.Join(cfg.DataDir, "raft.db"))
	if err != nil {
		return nil, fmt.Errorf("open raft log store: %w", err)
	}
	fileSnaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, logger)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	snaps := newPrivateSnapshots(fileSnaps, cfg.DataDir)

	var (
		transport raft.Transport
		closeT    func() error
		addr      raft.ServerAddress
		sl        *authStreamLayer
		refused   = newRefusals(logger)
	)
	if cfg.RaftAddr == "" {
		addr = raft.ServerAddress("inmem:" + cfg.NodeID)
		_, t := raft.NewInmemTransport(addr)
		transport, closeT = t, t.Close
	} else {
		adv := cfg.RaftAdvertise
		if adv == "" {
			adv = cfg.RaftAddr
		}
		advAddr, err := net.ResolveTCPAddr("tcp", adv)
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("raft advertise address %q: %w", adv, err)
		}
		sl, err = newAuthStreamLayer(cfg.RaftAddr, advAddr, cfg.ClusterKey, cfg.TLS, refused, logger)
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("raft transport on %s: %w", cfg.RaftAddr, err)
		}
		t := raft.NewNetworkTransportWithLogger(sl, 3, 10*time.Second, logger)
		transport, closeT, addr = t, t.Close, t.LocalAddr()
	}

	rc := cfg.Timings.raftConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = logger

	// RecoverCluster leaves the FSM it is given unusable: it gets its own.
	if err := recoverFromPeersJSON(cfg.DataDir, rc, newFSM(), store, snaps, transport, logger); err != nil {
		closeT()
		store.Close()
		return nil, err
	}
	f := newFSM()
	r, err := raft.NewRaft(rc, f, store, store, snaps, transport)
	if err != nil {
		closeT()
		store.Close()
		return nil, fmt.Errorf("start raft: %w", err)
	}
	n := &Node{cfg: cfg, raft: r, fsm: f, store: store, transport: transport, closeT: closeT, logger: logger, snaps: snaps, format: format, stream: sl, refused: refused}
	n.stopWatch = n.watchLeaders(&n.leaderChanges)
	has, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		n.Shutdown()
		return nil, fmt.Errorf("inspect raft state: %w", err)
	}
	n.hadState = has
	if cfg.Bootstrap {
		if !has {
			conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: rc.LocalID, Address: addr}}}
			if err := r.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
				n.Shutdown()
				return nil, fmt.Errorf("bootstrap raft: %w", err)
			}
			logger.Info("bootstrapped a new single-node cluster", "id", cfg.NodeID, "address", addr)
		}
	}
	return n, nil
}

// HadState reports whether the data dir held raft state when the node
// opened (a restart), as opposed to a fresh data dir.
func (n *Node) HadState() bool { return n.hadState }

// Apply proposes a command and waits until raft has committed and applied it.
// It returns the handler's result value.
func (n *Node) Apply(ctx context.Context, typ string, payload any) (any, error) {
	b, err := json.Marshal(proposal{Type: typ, At: time.Now().UTC(), Payload: payload})
	if err != nil {
		return nil, fmt.Errorf("encode %s command: %w", typ, err)
	}
	timeout := n.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	fut := n.raft.Apply(b, timeout)
	if err := fut.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return nil, ErrNotLeader
		}
		return nil, fmt.Errorf("raft apply %s: %w", typ, err)
	}
	res, _ := fut.Response().(applyResult)
	if res.err != nil {
		return nil, &CommandError{Err: res.err}
	}
	return res.value, nil
}

// Read runs fn with the state under a read lock. fn must not keep references
// into the state after it returns: copy what you need.
func (n *Node) Read(fn func(s *State)) {
	n.fsm.mu.RLock()
	defer n.fsm.mu.RUnlock()
	fn(n.fsm.state)
}

// ReadVersioned is Read that also returns the version of the state fn saw.
// Two reads that return the same version saw the same state.
func (n *Node) ReadVersioned(fn func(s *State)) (version uint64) {
	n.fsm.mu.RLock()
	defer n.fsm.mu.RUnlock()
	fn(n.fsm.state)
	return n.fsm.version.Load()
}

// StateVersion is the version of the state now (see ReadVersioned), without
// taking the lock: when it equals a version read before, nothing changed.
func (n *Node) StateVersion() uint64 { return n.fsm.version.Load() }

// WaitLeader blocks until the cluster has a leader or ctx ends.
func (n *Node) WaitLeader(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if addr, _ := n.raft.LeaderWithID(); addr != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no raft leader: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// Barrier waits until every committed entry has been applied to the FSM, so
// reads after it see all acknowledged writes (used at start-up).
func (n *Node) Barrier(ctx context.Context) error {
	timeout := n.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	return n.raft.Barrier(timeout).Error()
}

// Snapshot asks raft to take a snapshot now.
func (n *Node) Snapshot() error { return n.raft.Snapshot().Error() }

// shutdownSnapshotAfter is how many entries past the last snapshot make
// Shutdown take one: fewer replay in no time at the next start.
const shutdownSnapshotAfter = 256

// Shutdown stops raft and closes the stores. It is safe to call once.
// A node with many entries since its last snapshot takes one first, so a
// graceful restart restores the snapshot instead of replaying the log
// through the FSM (issue 24, S1).
func (n *Node) Shutdown() error {
	if n.stopWatch != nil {
		n.stopWatch()
	}
	n.snapshotIfBehind()
	err := n.raft.Shutdown().Error()
	if n.closeT != nil {
		if cerr := n.closeT(); err == nil {
			err = cerr
		}
	}
	if cerr := n.store.Close(); err == nil {
		err = cerr
	}
	return err
}

// snapshotIfBehind takes a snapshot when shutdownSnapshotAfter or more
// entries were applied since the last one. Best effort: a failure leaves
// the log to be replayed, as without it.
func (n *Node) snapshotIfBehind() {
	stats := n.raft.Stats()
	last, err1 := strconv.ParseUint(stats["applied_index"], 10, 64)
	snap, err2 := strconv.ParseUint(stats["last_snapshot_index"], 10, 64)
	if err1 != nil || err2 != nil || last < snap+shutdownSnapshotAfter {
		return
	}
	if err := n.raft.Snapshot().Error(); err != nil {
		n.logger.Warn("no snapshot at shutdown; the log will be replayed at the next start", "error", err)
	}
}
