package main

import (
	"io"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/shared/logfile"
	"github.com/svcd/svcd/shared/logging"
	"github.com/svcd/svcd/supervisor/config"
)

// openLogger builds the root logger of a long-running subcommand. With
// log_file set it writes each line to the rotating file and to stderr, as
// Consul and Nomad do (stderr keeps the journal's copy for start-up
// failures). Workers' lines reach it too: go-plugin relays a worker's stderr
// into the supervisor's logger. The returned close flushes nothing (every
// line is written through) and just closes the file.
func openLogger(name string, cfg config.Config) (hclog.Logger, func(), error) {
	if cfg.LogFile == "" {
		return logging.New(name, cfg.LogLevel, cfg.LogJSON), func() {}, nil
	}
	w, err := logfile.Open(cfg.LogFileOptions())
	if err != nil {
		return nil, nil, err
	}
	// The file first: io.MultiWriter stops at the first failing writer, and
	// a closed stderr must not cost the file its line.
	log := logging.NewTo(io.MultiWriter(w, os.Stderr), name, cfg.LogLevel, cfg.LogJSON)
	return log, func() { _ = w.Close() }, nil
}
