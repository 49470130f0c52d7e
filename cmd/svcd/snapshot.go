package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/raftstore/snapfile"
	"github.com/svcd/svcd/shared/keyderive"
)

// runSnapshot is `svcd snapshot save|restore`, the offline half of backups
// (docs/snapshots.md): save reads a stopped single node's data dir, restore
// writes a snapshot file into a fresh data dir. Against a running daemon use
// `svcctl snapshot save|restore`.
func runSnapshot(ctx context.Context, args []string) error {
	if len(args) == 0 || (args[0] != "save" && args[0] != "restore") {
		return errors.New("usage: svcd snapshot save|restore [-data-dir DIR] [-node-id ID] [-raft-addr A] FILE")
	}
	verb := args[0]
	fs := flag.NewFlagSet("svcd snapshot "+verb, flag.ContinueOnError)
	dataDir := fs.String("data-dir", "./data", "the data dir (stopped daemon for save; fresh for restore)")
	nodeID := fs.String("node-id", "node1", "the node id of the data dir (save) or the one the restored data dir starts as (restore)")
	raftAddr := fs.String("raft-addr", "", "the raft address the restored node will advertise; empty: a single node (restore)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: svcd snapshot %s [flags] FILE", verb)
	}
	file := fs.Arg(0)
	release, err := lockStopped("svcd snapshot "+verb, *dataDir, "`svcctl snapshot "+verb+"`")
	if err != nil {
		return err
	}
	defer release()
	if verb == "restore" {
		return snapshotRestoreOffline(*dataDir, *nodeID, *raftAddr, file)
	}
	return snapshotSaveOffline(ctx, *dataDir, *nodeID, file)
}

func snapshotRestoreOffline(dataDir, nodeID, raftAddr, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	key := offlineSnapshotKey(dataDir)
	h, payload, authenticated, err := raftstore.ReadBackup(f, key)
	if err != nil {
		return fmt.Errorf("%s refused, nothing written: %w", file, err)
	}
	switch {
	case h.Auth == snapfile.AuthHMAC && len(key) == 0:
		fmt.Fprintf(os.Stderr, "warning: %s carries a MAC but no cluster key was found to check it (set SVC_CLUSTER_KEY, or SVC_SHARED_TOKEN to the token of the cluster that wrote it): restored UNCHECKED\n", file)
	case !authenticated:
		fmt.Fprintf(os.Stderr, "warning: %s is format %d: not authenticated (no MAC), anyone could have edited it\n", file, h.FormatVersion)
	}
	if err := raftstore.RestoreDataDir(dataDir, nodeID, raftAddr, h, payload); err != nil {
		return err
	}
	return printJSON(map[string]any{"data_dir": dataDir, "node_id": nodeID, "restored": h})
}

// snapshotSaveOffline opens a stopped single node's data dir (raft.db is
// locked while a daemon runs on it), lets it apply its log and writes a
// snapshot file. A cluster member's dir cannot elect itself alone: back it
// up from the running leader with svcctl instead.
func snapshotSaveOffline(ctx context.Context, dataDir, nodeID, file string) error {
	if _, err := os.Stat(filepath.Join(dataDir, "raft.db")); err != nil {
		return fmt.Errorf("no raft state in %s: %w", dataDir, err)
	}
	key := offlineSnapshotKey(dataDir)
	if len(key) == 0 {
		fmt.Fprintln(os.Stderr, "warning: no cluster key found (SVC_CLUSTER_KEY, SVC_SHARED_TOKEN, the data dir's shared_token): the file is written unauthenticated (format 1)")
	}
	node, err := raftstore.Open(raftstore.Config{DataDir: dataDir, NodeID: nodeID, SnapshotKey: key})
	if err != nil {
		return fmt.Errorf("%w (a daemon running on %s holds raft.db locked: stop it, or use svcctl snapshot save against it)", err, dataDir)
	}
	defer node.Shutdown()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := node.WaitLeader(wctx); err != nil || !node.IsLeader() {
		return fmt.Errorf("%s is not a stopped single-node data dir (it did not lead on its own); back a cluster up from the running leader with svcctl snapshot save", dataDir)
	}
	if err := node.Barrier(wctx); err != nil {
		return fmt.Errorf("apply raft log: %w", err)
	}
	b, err := node.OpenBackup(wctx)
	if err != nil {
		return err
	}
	defer b.Close()
	tmp, err := os.CreateTemp(filepath.Dir(file), ".svcd-snapshot-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := b.Write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	return printJSON(map[string]any{"file": file, "header": b.Header})
}

func printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Println(string(b))
	return err
}

// offlineSnapshotKey is the snapshot MAC key for the offline commands: the
// cluster key as the daemon would take it (SVC_CLUSTER_KEY, else the shared
// token: SVC_SHARED_TOKEN or the data dir's shared_token file); nil when
// none is found.
func offlineSnapshotKey(dataDir string) []byte {
	master := os.Getenv("SVC_CLUSTER_KEY")
	if master == "" {
		master = os.Getenv("SVC_SHARED_TOKEN")
	}
	if master == "" {
		if b, err := os.ReadFile(filepath.Join(dataDir, "shared_token")); err == nil {
			master = strings.TrimSpace(string(b))
		}
	}
	if master == "" {
		return nil
	}
	return keyderive.Derive([]byte(master), keyderive.SnapshotAuth)
}
