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
