package raftstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// PeersFile is the manual-recovery file raft's documentation describes: when
// it is in the data dir at start-up, the node rewrites its cluster
// configuration to exactly these servers (keeping its log and state), then
// renames the file so it is applied once.
const PeersFile = "peers.json"

// Peer is one entry of peers.json (raft's own format).
type Peer struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	NonVoter bool   `json:"non_voter"`
}

// WritePeersFile writes peers.json into dataDir for the next start. It is
// how a lone survivor of a two-voter cluster is promoted by hand.
func WritePeersFile(dataDir string, peers []Peer) (string, error) {
	if len(peers) == 0 {
		return "", errors.New("peers.json needs at least one server")
	}
	for _, p := range peers {
		if p.ID == "" || p.Address == "" {
			return "", errors.New("every peer needs an id and an address")
		}
	}
	b, err := json.MarshalIndent(peers, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dataDir, PeersFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

func recoverFromPeersJSON(dataDir string, rc *raft.Config, f raft.FSM, store interface {
	raft.LogStore
	raft.StableStore
}, snaps raft.SnapshotStore, t raft.Transport, log hclog.Logger) error {
	path := filepath.Join(dataDir, PeersFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	conf, err := raft.ReadConfigJSON(path)
	if err != nil {
		return fmt.Errorf("recovery file %s: %w", path, err)
	}
	if err := raft.RecoverCluster(rc, f, store, store, snaps, t, conf); err != nil {
		return fmt.Errorf("recover cluster from %s: %w", path, err)
	}
	done := path + ".applied"
	if err := os.Rename(path, done); err != nil {
		return fmt.Errorf("recovered, but could not rename %s: %w", path, err)
	}
	log.Warn("cluster configuration rewritten from peers.json (manual recovery)", "servers", len(conf.Servers), "renamed_to", done)
	return nil
}
