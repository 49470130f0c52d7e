package main

import (
	"context"
	"io"
	"os"
	"slices"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/shared/logfile"
	"github.com/svcd/svcd/shared/logging"
	"github.com/svcd/svcd/shared/reload"
	"github.com/svcd/svcd/supervisor/config"
)

// openLogger builds the root logger of a long-running subcommand. With
// log_file set it writes each line to the rotating file and to stderr, as
// Consul and Nomad do (stderr keeps the journal's copy for start-up
// failures). Workers' lines reach it too: go-plugin relays a worker's stderr
// into the supervisor's logger. The returned close flushes nothing (every
// line is written through) and just closes the file.
//
// It also registers what SIGHUP reloads for every subcommand (the Set in
// ctx): the log file is reopened (logrotate renamed it) and the config is
// read again with load, the log level applied and other changes reported as
// needing a restart.
func openLogger(ctx context.Context, name string, cfg config.Config, load func() (config.Config, error)) (hclog.Logger, func(), error) {
	set := reload.From(ctx)
	if cfg.LogFile == "" {
		log := logging.New(name, cfg.LogLevel, cfg.LogJSON)
		set.SetLogger(log)
		set.Add(configReloader(set, log, cfg, load))
		return log, func() {}, nil
	}
	w, err := logfile.Open(cfg.LogFileOptions())
	if err != nil {
		return nil, nil, err
	}
	// The file first: io.MultiWriter stops at the first failing writer, and
	// a closed stderr must not cost the file its line.
	log := logging.NewTo(io.MultiWriter(w, os.Stderr), name, cfg.LogLevel, cfg.LogJSON)
	if was, ok := w.Tightened(); ok {
		log.Warn("log_file was readable by others; made it 0600", "path", cfg.LogFile, "mode_was", was.String())
	}
	set.SetLogger(log)
	set.Add(reload.Func{N: "log_file", F: w.Reopen})
	set.Add(configReloader(set, log, cfg, load))
	return log, func() { _ = w.Close() }, nil
}

// configReloader reads the config again (file, environment and the same
// flags, layered as at start) and applies log_level. Keys another reloader
// claimed (set.Claim: the exec settings in svcd serve) are left to it; every
// other changed key needs a restart and is reported as such each time until
// there is one: the running config stays what the process started with.
func configReloader(set *reload.Set, log hclog.Logger, running config.Config, load func() (config.Config, error)) reload.Reloader {
	return reload.Func{N: "config", F: func() error {
		next, err := load()
		if err != nil {
			return err
		}
		changed := config.Changed(running, next)
		if slices.Contains(changed, "log_level") {
			log.SetLevel(hclog.LevelFromString(next.LogLevel))
			log.Info("log level changed", "from", running.LogLevel, "to", next.LogLevel)
			running.LogLevel = next.LogLevel
			changed = slices.DeleteFunc(changed, func(k string) bool { return k == "log_level" })
		}
		changed = slices.DeleteFunc(changed, set.Claimed)
		if len(changed) > 0 {
			return &reload.RestartNeeded{Keys: changed}
		}
		return nil
	}}
}
