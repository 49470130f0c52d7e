package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/clustertls"
	"github.com/svcd/svcd/shared/reload"
	"github.com/svcd/svcd/shared/version"
	"github.com/svcd/svcd/supervisor/cluster"
	"github.com/svcd/svcd/supervisor/config"
	"github.com/svcd/svcd/supervisor/datalock"
	"github.com/svcd/svcd/supervisor/witnessobs"
)

// runWitness is `svcd witness`: a raft voter with no HTTP listener and no
// workers, so two full nodes keep a majority when one dies. It joins through
// a member's API (-join) and hands leadership away whenever it wins an
// election: it has no API to serve as the active node.
func runWitness(ctx context.Context, args []string) error {
	cfg, err := config.Load("svcd witness", args, os.Getenv)
	if err != nil {
		return err
	}
	if cfg.RaftAddr == "" || len(cfg.Join) == 0 {
		return errors.New("a witness needs -raft-addr and -join (the API address of a cluster member)")
	}
	token := cfg.SharedToken
	if token == "" {
		return errors.New("a witness needs the cluster's shared token (SVC_SHARED_TOKEN) to join; it never generates one")
	}
	key := cfg.ClusterKey
	if key == "" {
		key = token
	}
	log, closeLog, err := openLogger(ctx, "svcd-witness", cfg, func() (config.Config, error) { return config.Load("svcd witness", args, os.Getenv) })
	if err != nil {
		return err
	}
	defer closeLog()
	// One process per data dir, as for serve (data_dir/LOCK).
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	lock, err := datalock.Acquire(cfg.DataDir)
	if err != nil {
		return err
	}
	defer lock.Release()
	// The optional monitoring listener binds before raft opens: a port in
	// use fails the start before anything else happens.
	var obsLn net.Listener
	if cfg.WitnessListen != "" {
		if obsLn, err = net.Listen("tcp", cfg.WitnessListen); err != nil {
			return listenError(cfg.WitnessListen, err)
		}
		defer obsLn.Close()
	}
	clusterTLS, err := openWitnessTLS(ctx, cfg, log)
	if err != nil {
		return err
	}
	node, err := raftstore.Open(raftstore.Config{
		NodeID: cfg.NodeID, DataDir: cfg.DataDir, RaftAddr: cfg.RaftAddr, RaftAdvertise: cfg.RaftAdvertise,
		ClusterKey: []byte(key), TLS: clusterTLS, Timings: raftstore.WitnessTimings(cfg.ClusterTimings()), Logger: log,
		AllowDowngrade: cfg.AllowDowngrade,
	})
	if err != nil {
		return err
	}
	defer node.Shutdown()
	if node.HadState() && node.HasConfiguration() && !node.IsMember() { // half-joined (no configuration yet) may finish joining
		return fmt.Errorf("the data dir %s holds raft state of a cluster this witness (%s) is not a member of; use an empty data dir", cfg.DataDir, cfg.NodeID)
	}
	opts := cluster.Options{Node: node, NodeID: cfg.NodeID, Kind: raftstore.KindWitness, Version: version.Get().Version, Token: token, Log: log.Named("cluster")}
	if node.ClusterTLS() {
		opts.DialForward = node.DialForward // join over a member's raft port (docs/ha.md, TLS)
	}
	c := cluster.New(opts)
	if !node.IsMember() {
		if err := c.Join(ctx, cfg.Join); err != nil {
			return err
		}
	}
	if obsLn != nil {
		srv := &http.Server{Handler: witnessobs.Handler(cfg.WitnessListen, node, version.Get().Version), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(obsLn) }()
		defer srv.Close()
		log.Info("witness monitoring listener", "address", obsLn.Addr().String(), "paths", "/healthz /readyz /metrics")
	}
	log.Info("witness running", "node_id", cfg.NodeID, "raft_addr", node.RaftAddr())
	followLeaders(ctx, node, cfg.NodeID, log)
	return nil
}

// followLeaders remembers the last full node that led and hands leadership
// back to a full node whenever this witness wins an election, until ctx ends.
func followLeaders(ctx context.Context, node *raftstore.Node, self string, log hclog.Logger) {
	// followed is the last full node this witness knew as leader: when the
	// witness wins an election, that node is the one that went away, so the
	// hand-over goes to the other one.
	followed := ""
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("witness stopping")
			return
		case <-tick.C:
			if id, _ := node.Leader(); id != "" && id != self {
				followed = id
			}
		case leader := <-node.LeaderChanges():
			if leader {
				handOver(ctx, node, followed, log)
			}
		}
	}
}

// openWitnessTLS loads the cluster's CA, certificate and key when cluster
// TLS is on (nil when raft runs plain) and has SIGHUP re-read them, as on a
// full node.
func openWitnessTLS(ctx context.Context, cfg config.Config, log hclog.Logger) (*clustertls.Holder, error) {
	clusterTLS, err := cfg.OpenClusterTLS()
	if err != nil || clusterTLS == nil {
		return nil, err
	}
	log.Info("raft uses mutual TLS", "certificate", clusterTLS.Describe())
	reload.From(ctx).Add(reload.Func{N: "cluster_tls", F: func() error {
		what, err := clusterTLS.Reload()
		if err == nil {
			log.Info("cluster TLS reloaded", "certificate", what)
		}
		return err
	}})
	return clusterTLS, nil
}

// handOver transfers leadership to a full node, retrying while this witness
// still leads: a transfer fails when the chosen node is still catching up
// (the witness often wins precisely because its log was the longest), and
// raft will not elect anybody else while the witness keeps the lease.
func handOver(ctx context.Context, node *raftstore.Node, gone string, log hclog.Logger) {
	log.Info("the witness won an election; handing leadership to a full node", "previous_leader", gone)
	for attempt := 1; node.IsLeader() && ctx.Err() == nil; attempt++ {
		// First to the surviving full node by name; if that fails (it is
		// behind, or it was the one that died after all), let raft pick.
		var err error
		if id, addr := node.HandOverTarget(gone); id != "" && attempt%2 == 1 {
			err = node.TransferLeadershipTo(id, addr)
		} else {
			err = node.TransferLeadership()
		}
		if err == nil {
			return
		}
		log.Warn("leadership transfer failed; retrying", "attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}
