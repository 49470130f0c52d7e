package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/svcd/svcd/shared/guard"
	"github.com/svcd/svcd/supervisor/config"
	"github.com/svcd/svcd/supervisor/statuswrapper"
)

func runStatusWrapper(ctx context.Context, args []string) error {
	cfg, err := config.Load("svcd status-wrapper", args, os.Getenv)
	if err != nil {
		return err
	}
	log, closeLog, err := openLogger(ctx, "svcd-status", cfg, func() (config.Config, error) { return config.Load("svcd status-wrapper", args, os.Getenv) })
	if err != nil {
		return err
	}
	defer closeLog()
	ln, err := net.Listen("tcp", cfg.StatusListen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.StatusListen, err)
	}
	// The token is optional here: only a daemon with require_token = "all"
	// wants it for its state. Found the way svcctl finds it.
	token, source, err := cfg.LocateToken()
	if err != nil {
		log.Info("no shared token found; reading the daemon without one (a daemon with require_token = \"all\" will refuse)", "detail", err.Error())
	} else {
		log.Info("reading the daemon with the shared token", "source", string(source))
	}
	srv := &http.Server{Handler: statuswrapper.New(cfg.StatusDaemon, token, guard.New(cfg.StatusListen, cfg.AllowedHosts, cfg.AllowedOrigins), log).Handler(), ReadHeaderTimeout: 10 * time.Second}
	log.Info("status wrapper listening", "address", ln.Addr().String(), "daemon_url", cfg.StatusDaemon)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout())
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
