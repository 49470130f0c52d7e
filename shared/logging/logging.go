// Package logging builds the go-hclog root logger every svcd process uses.
package logging

import (
	"io"
	"os"

	"github.com/hashicorp/go-hclog"
)

// New returns a root logger named name at level, writing JSON lines when
// jsonFormat is set (the -log-json flag). Output goes to stderr: stdout is
// reserved for go-plugin's handshake in worker processes.
func New(name, level string, jsonFormat bool) hclog.Logger {
	return NewTo(os.Stderr, name, level, jsonFormat)
}

// NewTo is New with an explicit writer (tests capture logs with it).
func NewTo(w io.Writer, name, level string, jsonFormat bool) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:            name,
		Level:           hclog.LevelFromString(level),
		JSONFormat:      jsonFormat,
		Output:          w,
		IncludeLocation: false,
		TimeFormat:      "2006-01-02T15:04:05.000Z07:00",
	})
}

// WorkerTimeFormat is the @timestamp layout go-plugin parses in a worker's
// JSON stderr lines (microseconds). A line in any other layout fails its
// parse and is forwarded as one opaque debug message (its level and fields,
// request_id included, lost inside a string).
const WorkerTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// NewWorker returns a worker's root logger: JSON on stderr in the layout
// go-plugin forwards field by field through the supervisor's logger.
func NewWorker(name, level string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclog.LevelFromString(level),
		JSONFormat: true,
		Output:     os.Stderr,
		TimeFormat: WorkerTimeFormat,
	})
}
