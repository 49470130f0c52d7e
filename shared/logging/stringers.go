package logging

import (
	"encoding"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/go-hclog"
)

// Stringers wraps a logger so that a field value with a String method and
// no JSON encoding of its own is logged as its string. hclog's JSON format
// marshals values as they are, so hashicorp/raft's fields (*raft.Raft in
// "entering leader state", raft.Configuration, …) printed as {} in -log-json
// logs (issue 35); the text format already used String. Values that marshal
// themselves (json.Marshaler, encoding.TextMarshaler) and errors (hclog
// handles those) are left alone.
func Stringers(l hclog.Logger) hclog.Logger { return stringers{l} }

type stringers struct{ hclog.Logger }

func stringArgs(args []any) []any {
	var out []any
	for i := 1; i < len(args); i += 2 {
		s, ok := args[i].(fmt.Stringer)
		if !ok {
			continue
		}
		switch args[i].(type) {
		case json.Marshaler, encoding.TextMarshaler, error:
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = s.String()
	}
	if out == nil {
		return args
	}
	return out
}

func (s stringers) Log(level hclog.Level, msg string, args ...any) {
	s.Logger.Log(level, msg, stringArgs(args)...)
}
func (s stringers) Trace(msg string, args ...any) { s.Logger.Trace(msg, stringArgs(args)...) }
func (s stringers) Debug(msg string, args ...any) { s.Logger.Debug(msg, stringArgs(args)...) }
func (s stringers) Info(msg string, args ...any)  { s.Logger.Info(msg, stringArgs(args)...) }
func (s stringers) Warn(msg string, args ...any)  { s.Logger.Warn(msg, stringArgs(args)...) }
func (s stringers) Error(msg string, args ...any) { s.Logger.Error(msg, stringArgs(args)...) }
func (s stringers) With(args ...any) hclog.Logger {
	return stringers{s.Logger.With(stringArgs(args)...)}
}
func (s stringers) Named(name string) hclog.Logger      { return stringers{s.Logger.Named(name)} }
func (s stringers) ResetNamed(name string) hclog.Logger { return stringers{s.Logger.ResetNamed(name)} }
