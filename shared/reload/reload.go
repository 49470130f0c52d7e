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

// Applied is returned by a Reloader that applied changed settings; Keys
// names them (config keys) for the log line. Like RestartNeeded it is not
// a failure.
type Applied struct{ Keys []string }

func (a *Applied) Error() string { return "applied" }

// Set is the ordered list of a process's reloaders and the logger that
// reports a reload. Safe for concurrent use.
type Set struct {
	mu      sync.Mutex
	rs      []Reloader
	log     hclog.Logger
	claimed map[string]bool
	run     uint64 // counts Runs: OncePerRun's memo is for one of them
}

// Claim records config keys a reloader applies in place (the exec
// settings in svcd serve), so the reloader that re-reads the config does
// not report them as needing a restart.
func (s *Set) Claim(keys ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claimed == nil {
		s.claimed = map[string]bool{}
	}
	for _, k := range keys {
		s.claimed[k] = true
	}
}

// Claimed: some reloader applies key in place.
func (s *Set) Claimed(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimed[key]
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
	Applied      []string          // settings reloaders named as applied (Applied)
	Failed       map[string]string // reloader name → why it kept its old state
	NeedsRestart []string          // changed settings only a restart applies
}

// Run runs every reloader and logs the result at info (warn when one failed).
func (s *Set) Run() Result {
	s.mu.Lock()
	rs := append([]Reloader(nil), s.rs...)
	log := s.log
	s.run++
	s.mu.Unlock()
	res := Result{Failed: map[string]string{}}
	for _, r := range rs {
		err := r.Reload()
		var rn *RestartNeeded
		ap, applied := err.(*Applied)
		switch {
		case err == nil:
			res.Reloaded = append(res.Reloaded, r.Name())
		case applied:
			res.Reloaded = append(res.Reloaded, r.Name())
			res.Applied = append(res.Applied, ap.Keys...)
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
	args := []any{"reloaded", res.Reloaded, "applied", res.Applied, "needs_restart", res.NeedsRestart}
	if len(res.Failed) > 0 {
		log.Warn("SIGHUP: reload done; some parts kept their old state", append(args, "failed", res.Failed)...)
	} else {
		log.Info("SIGHUP: reload done", args...)
	}
	return res
}

// OncePerRun wraps f (reading the config again) so that the reloaders of
// one SIGHUP share one call: two reloaders that each read the file would
// parse it twice and, when an edit broke it, report the same error twice.
// Outside a Run (before the first SIGHUP) every call calls f.
func OncePerRun[T any](s *Set, f func() (T, error)) func() (T, error) {
	var (
		mu   sync.Mutex
		seen uint64
		v    T
		err  error
	)
	return func() (T, error) {
		s.mu.Lock()
		run := s.run
		s.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		if run == 0 || run != seen {
			v, err = f()
			seen = run
		}
		return v, err
	}
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
