package main

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/svcd/svcd/shared/reload"
	"github.com/svcd/svcd/supervisor"
	"github.com/svcd/svcd/supervisor/config"
)

func runServe(ctx context.Context, args []string) error {
	cfg, err := config.Load("svcd serve", args, os.Getenv)
	if err != nil {
		return err
	}
	// The config and exec reloaders read the config once per SIGHUP.
	load := reload.OncePerRun(reload.From(ctx), func() (config.Config, error) { return config.Load("svcd serve", args, os.Getenv) })
	log, closeLog, err := openLogger(ctx, "svcd", cfg, load)
	if err != nil {
		return err
	}
	defer closeLog()
	if cfg.WorkerExecutable == "" {
		// Workers are this binary re-executed as `svcd worker NAME`.
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find own executable for workers: %w", err)
		}
		cfg.WorkerExecutable = exe
	}
	// Bind first: a port in use must fail before the data dir, the token
	// file or raft exist, and say how to move the daemon elsewhere.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return listenError(cfg.Listen, err)
	}
	if err := probeRaftAddr(cfg.RaftAddr); err != nil {
		ln.Close()
		return err
	}
	if w := exposureWarning(ln.Addr(), cfg); w != "" {
		log.Warn(w)
	}
	// Answer at once while raft opens and the log replays (503 starting)
	// rather than leave connections hanging on a bound port (issue 33).
	starting := supervisor.ServeStarting(ln, log)
	srv, err := supervisor.New(ctx, cfg, log)
	if err != nil {
		starting.Abort()
		return err
	}
	// SIGHUP re-reads the cluster's CA, certificate and key (no-op without TLS).
	reload.From(ctx).Add(reload.Func{N: "cluster_tls", F: srv.ReloadClusterTLS})
	// SIGHUP applies the exec limits and roots to new commands (issue 35);
	// the config reloader leaves these keys to it.
	reload.From(ctx).Claim(supervisor.ReloadableExecKeys...)
	reload.From(ctx).Add(reload.Func{N: "exec", F: func() error {
		next, err := load()
		if err != nil {
			return err
		}
		return srv.ReloadExec(next)
	}})
	return srv.ServeStarted(ctx, starting, ln.Addr())
}
