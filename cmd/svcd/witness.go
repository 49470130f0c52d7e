package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/logging"
	"github.com/svcd/svcd/supervisor/cluster"
	"github.com/svcd/svcd/supervisor/config"
)

// runWitness runs a raft voter with no HTTP listener and no workers: it only
// breaks ties between two full nodes. If it ever wins an election it hands
// leadership away at once, since it cannot serve. It joins through -join
// (a member's API URL) with the shared token, which must be configured.
func runWitness(ctx context.Context, args []string) error {
	cfg, err := config.Load("svcd witness", args, os.Getenv)
	if err != nil {
		return err
	}
	if cfg.SharedToken == "" || cfg.RaftAddr == "" {
		return errors.New("svcd witness needs -raft-addr and a shared token (shared_token or SVC_SHARED_TOKEN) to authenticate raft")
	}
	log := logging.New("svcd-witness", cfg.LogLevel, cfg.LogJSON)
	node, err := raftstore.Open(raftstore.Config{
		NodeID: cfg.NodeID, DataDir: cfg.DataDir, RaftAddr: cfg.RaftAddr,
		Bootstrap: false, Logger: log, ClusterKey: raftstore.ClusterKeyFromToken(cfg.SharedToken),
	})
	if err != nil {
		return err
	}
	defer node.Shutdown()
	stop := node.OnLeadership(func(leader bool) {
		if leader {
			if err := node.TransferLeadership(); err != nil {
				log.Warn("witness could not hand leadership away", "error", err)
			} else {
				log.Info("witness won an election and handed leadership away")
			}
		}
	})
	defer stop()
	if cfg.Join != "" {
		go func() {
			if err := cluster.RequestJoin(ctx, cfg.Join, cfg.SharedToken, cfg.NodeID, node.RaftAddr(), 250*time.Millisecond); err != nil {
				log.Error("witness join failed", "via", cfg.Join, "error", err)
			}
		}()
	}
	log.Info("witness running", "id", cfg.NodeID, "raft_addr", node.RaftAddr())
	<-ctx.Done()
	return nil
}
