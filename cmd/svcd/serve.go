package main

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/svcd/svcd/supervisor"
	"github.com/svcd/svcd/supervisor/config"
)

func runServe(ctx context.Context, args []string) error {
	cfg, err := config.Load("svcd serve", args, os.Getenv)
	if err != nil {
		return err
	}
	log, closeLog, err := openLogger("svcd", cfg)
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
	srv, err := supervisor.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		srv.Close()
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	return srv.Serve(ctx, ln)
}
