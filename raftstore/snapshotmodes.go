package raftstore

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// hashicorp/raft's FileSnapshotStore makes <data>/snapshots 0755 and its
// state.bin and meta.json with os.Create (0644 under the usual umask). They
// hold the whole FSM, pairing state among it, and an exec'd command running
// as another user than the daemon could read them (issue 32). privateSnapshots
// closes the directory to others (0700) and makes every snapshot file 0600,
// those already there at start and each new one when its sink closes.
type privateSnapshots struct {
	raft.SnapshotStore
	dir string // <data>/snapshots
}

func newPrivateSnapshots(inner raft.SnapshotStore, dataDir string) *privateSnapshots {
	p := &privateSnapshots{SnapshotStore: inner, dir: filepath.Join(dataDir, "snapshots")}
	_ = os.Chmod(p.dir, 0o700)
	privateTree(p.dir)
	return p
}

func (p *privateSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := p.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &privateSink{SnapshotSink: sink, dir: p.dir}, nil
}

type privateSink struct {
	raft.SnapshotSink
	dir string
}

// Close persists the snapshot (raft renames its temporary directory to the
// snapshot's ID) and then makes its files 0600.
func (s *privateSink) Close() error {
	err := s.SnapshotSink.Close()
	if err == nil {
		privateTree(filepath.Join(s.dir, s.ID()))
	}
	return err
}

// privateTree makes every file beneath dir 0600 and every directory 0700.
// Best effort: a snapshot is no less valid for a chmod that failed.
func privateTree(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			_ = os.Chmod(p, 0o700)
		} else if d.Type().IsRegular() {
			_ = os.Chmod(p, 0o600)
		}
		return nil
	})
}
