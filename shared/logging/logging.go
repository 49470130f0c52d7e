// Package logging builds the go-hclog root logger every svcd process uses.
package logging

import (
	"io"
	"log/slog"
	"os"
	"strings"

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
	return newLogger(w, name, level, jsonFormat, "2006-01-02T15:04:05.000Z07:00")
}

// pluginTimeFormat is the only @timestamp layout go-plugin's client parses
// when it relays a worker's JSON stderr line into the supervisor's logger
// (go-plugin log_entry.go). With any other layout the whole JSON line is
// relayed as the message of a debug entry: the worker's level is lost and,
// at the default info level, the line never reaches the log or log_file.
const pluginTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// NewWorker is the logger of a worker process: JSON on stderr in the layout
// go-plugin relays with its level and fields into the supervisor's log.
func NewWorker(name, level string) hclog.Logger {
	return newLogger(os.Stderr, name, level, true, pluginTimeFormat)
}

func newLogger(w io.Writer, name, level string, jsonFormat bool, timeFormat string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:            name,
		Level:           hclog.LevelFromString(level),
		JSONFormat:      jsonFormat,
		Output:          w,
		IncludeLocation: false,
		TimeFormat:      timeFormat,
	})
}

// NewWorkerSlog is NewWorker for code that logs with log/slog (agentd): JSON
// on stderr with go-plugin's keys (@timestamp in its layout, @level,
// @message), so the supervisor relays each line with its level and fields
// rather than as one opaque debug string.
func NewWorkerSlog() *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				return slog.String("@timestamp", a.Value.Time().Format(pluginTimeFormat))
			case slog.LevelKey:
				return slog.String("@level", strings.ToLower(a.Value.String()))
			case slog.MessageKey:
				return slog.String("@message", a.Value.String())
			}
			return a
		},
	}))
}
