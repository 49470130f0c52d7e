package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/svcd/svcd/raftstore"
)

// runRecover is `svcd recover`: it writes peers.json into a stopped node's
// data dir, so that on its next start the node rewrites its cluster
// configuration to those servers. This is the documented manual promotion
// of a lone survivor of a two-voter cluster (docs/ha.md); run it only with
// every other node stopped.
func runRecover(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("svcd recover", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "./data", "the stopped node's data dir")
	nodeID := fs.String("node-id", "node1", "this node's raft id")
	raftAddr := fs.String("raft-addr", "", "this node's raft address (host:port)")
	peers := fs.String("peers", "", "other voters to keep, as id=host:port,… (default: none — this node alone)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *raftAddr == "" {
		return errors.New("-raft-addr is required (the address this node's raft listens on)")
	}
	list := []raftstore.Peer{{ID: *nodeID, Address: *raftAddr}}
	for _, p := range strings.Split(*peers, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		id, addr, ok := strings.Cut(p, "=")
		if !ok || id == "" || addr == "" {
			return fmt.Errorf("-peers entry %q: want id=host:port", p)
		}
		list = append(list, raftstore.Peer{ID: id, Address: addr})
	}
	if _, err := os.Stat(*dataDir); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	release, err := lockStopped("svcd recover", *dataDir, "")
	if err != nil {
		return err
	}
	defer release()
	path, err := raftstore.WritePeersFile(*dataDir, list)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s with %d server(s); start the node now and it takes this configuration once\n", path, len(list))
	return nil
}
