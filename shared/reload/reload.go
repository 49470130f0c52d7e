// Package reload is what SIGHUP does in a long-running svcd process, the way
// Consul, Nomad and Vault do it: each part that can take a change without a
// restart (the log level, the log file after logrotate renamed it, later the
// TLS certificates) registers a Reloader; SIGHUP runs them all in the order
// they were added and logs, in one line, what was reloaded, what failed and
// which changed settings need a restart. A failed reloader keeps its old
// state: a bad edit never takes down a running daemon.
package reload

import (
	"context"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Reloader is one thing SIGHUP reloads in place. Name is how the log names
// it (a config key such as "log_level", or "tls"); Reload applies the change
// or returns why it could not, leaving the old state in force.
type Reloader interface {
	Name() string
	Reload() error
}

// Func adapts a function to a Reloader.
type Func struct {
	N string
	F func() error
}

func (f Func) Name() string  { return f.N }
func (f Func) Reload() error { return f.F() }

// RestartNeeded is returned by a Reloader that found changes it cannot apply
// in place; Keys names them (config keys) so the operator knows to restart.
// The reloader still applied what it could.
type RestartNeeded struct{ Keys []string }

func (r *RestartNeeded) Error() string { return "needs a restart" }

// Set is the ordered list of a process's reloaders and the logger that
// reports a reload. Safe for concurrent use.
type Set struct {
	mu  sync.Mutex
	rs  []Reloader
	log hclog.Logger
}

// Add appends r; SIGHUP runs reloaders in the order they were added.
func (s *Set) Add(r Reloader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rs = append(s.rs, r)
}

// SetLogger names the logger a reload reports to (the process's root logger,
// known only once the subcommand has opened its log).
func (s *Set) SetLogger(log hclog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = log
}

// Result is what one Run did.
type Result struct {
	Reloaded     []string          // reloaders that applied their change (or had none)
	Failed       map[string]string // reloader name → why it kept its old state
	NeedsRestart []string          // changed settings only a restart applies
}

// Run runs every reloader and logs the result at info (warn when one failed).
func (s *Set) Run() Result {
	s.mu.Lock()
	rs := append([]Reloader(nil), s.rs...)
	log := s.log
	s.mu.Unlock()
	res := Result{Failed: map[string]string{}}
	for _, r := range rs {
		err := r.Reload()
		var rn *RestartNeeded
		switch {
		case err == nil:
			res.Reloaded = append(res.Reloaded, r.Name())
		case asRestart(err, &rn):
			res.Reloaded = append(res.Reloaded, r.Name())
			res.NeedsRestart = append(res.NeedsRestart, rn.Keys...)
		default:
			res.Failed[r.Name()] = err.Error()
		}
	}
	if log == nil {
		return res
	}
	args := []any{"reloaded", res.Reloaded, "needs_restart", res.NeedsRestart}
	if len(res.Failed) > 0 {
		log.Warn("SIGHUP: reload done; some parts kept their old state", append(args, "failed", res.Failed)...)
	} else {
		log.Info("SIGHUP: reload done", args...)
	}
	return res
}

func asRestart(err error, rn **RestartNeeded) bool {
	r, ok := err.(*RestartNeeded)
	if ok {
		*rn = r
	}
	return ok
}

type ctxKey struct{}

// WithSet returns ctx carrying s: main makes the Set before it knows which
// subcommand runs, the subcommand adds its reloaders to it.
func WithSet(ctx context.Context, s *Set) context.Context {
	return context.WithValue(ctx, ctxKey{}, s)
}

// From returns the Set in ctx, or a fresh one nobody signals (tests and
// subcommands run without main).
func From(ctx context.Context) *Set {
	if s, ok := ctx.Value(ctxKey{}).(*Set); ok {
		return s
	}
	return &Set{}
}
