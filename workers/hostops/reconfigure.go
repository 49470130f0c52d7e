package hostops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// What a SIGHUP may change in a running worker (issue 35), and how.
//
// The supervisor re-reads its config, builds the worker's Config as at
// spawn and calls Reconfigure. The worker checks it (ValidateReconfigure)
// and swaps one pointer (Local.live) for new operations; the sandbox swaps
// the config new spawners are built from, and a spawner whose Landlock rules
// came from the old roots is retired when next taken (as a stale
// HiddenStamp is). A command already running keeps its cgroup limits,
// rlimits and spawner: they were fixed when it started.
//
// Only the keys below may change; everything else the worker was built
// with (sandbox mode, identity, cgroup parent, network, output and file
// caps, which size the gRPC message limit fixed at spawn) needs a restart,
// and a Config that changes them is refused whole.

// liveConfig is the part of the worker that Reconfigure replaces at once.
type liveConfig struct {
	cfg     Config
	paths   *resolver
	env     []string // the commands' environment (exec_env_allow)
	noTrace bool     // rlimits go through the shim: tracing is not allowed here
}

func newLiveConfig(cfg Config, environ []string) (*liveConfig, error) {
	paths, err := newResolver(cfg.AllowedRoots)
	if err != nil {
		return nil, err
	}
	return &liveConfig{cfg: cfg, paths: paths, env: childEnv(environ, cfg.EnvAllow)}, nil
}

// now is the config in force for an operation starting now.
func (l *Local) now() *liveConfig { return l.live.Load() }

// tracingRefused probes, once per set of rlimits, whether the child can be
// limited by tracing; true: use the re-exec shim.
func (l *Local) tracingRefused(limits map[string]uint64) bool {
	if len(limits) == 0 {
		return false
	}
	if err := canTraceLimits(l.spawner, limits); err != nil {
		l.log.Warn("exec limits cannot be applied by tracing the child; using the slower re-exec shim", "error", err)
		return true
	}
	return false
}

// Reconfigure applies next to operations that start after it returns, or
// refuses it (the error says why) and changes nothing.
func (l *Local) Reconfigure(_ context.Context, next Config) error {
	l.reconfMu.Lock()
	defer l.reconfMu.Unlock()
	old := l.now()
	if err := ValidateReconfigure(old.cfg, next); err != nil {
		return err
	}
	if os.Getenv(confinedEnv) != "" {
		if out := outsideConfinement(l.started, next); out != "" {
			return fmt.Errorf("%s%s is outside the roots this worker confined itself to at start (Landlock only narrows)", respawnPrefix, out)
		}
	}
	live, err := newLiveConfig(next, l.environ)
	if err != nil {
		return err
	}
	live.noTrace = old.noTrace
	if !reflect.DeepEqual(old.cfg.Rlimits, next.Rlimits) {
		live.noTrace = l.tracingRefused(next.Rlimits)
	}
	if l.sandbox != nil {
		box := next.Sandbox
		// Pool cgroups keep the start's preset limits: each command's
		// cgroup gets its own limits written (begin → SetLimits).
		l.sandbox.cfg.Store(&box)
	}
	l.live.Store(live)
	l.log.Info("hostops config reloaded", "allowed_roots", next.AllowedRoots, "write_roots", next.Sandbox.WriteRoots,
		"read_roots", next.Sandbox.ReadRoots, "limits", next.Sandbox.Limits, "max_limits", next.Sandbox.MaxLimits)
	return nil
}

// ValidateReconfigure checks that next may replace old in a running worker:
// only the reloadable keys differ, and their new values are sound (roots
// absolute and present, limits within their maximum, rlimits known).
func ValidateReconfigure(old, next Config) error {
	if !reflect.DeepEqual(fixedPart(old), fixedPart(next)) {
		return fmt.Errorf("only exec_limits, exec_limits_max, exec_write_roots, exec_read_roots, hostops_allowed_roots, exec_timeout_max_ms, exec_rlimits and exec_env_allow reload; the other exec settings need a restart")
	}
	if next.MaxTimeoutMs <= 0 {
		return fmt.Errorf("exec_timeout_max_ms must be positive, got %d", next.MaxTimeoutMs)
	}
	if err := ValidateRlimits(next.Rlimits); err != nil {
		return fmt.Errorf("exec_rlimits: %w", err)
	}
	if err := next.Sandbox.Limits.Within(next.Sandbox.MaxLimits); err != nil {
		return fmt.Errorf("exec_limits: %w", err)
	}
	if !old.Sandbox.WantsCPU() && next.Sandbox.WantsCPU() {
		return fmt.Errorf("exec_limits: a CPU limit needs a restart (the cgroup tree was opened without the cpu controller)")
	}
	for _, r := range []struct {
		key   string
		roots []string
	}{{"hostops_allowed_roots", next.AllowedRoots}, {"exec_write_roots", next.Sandbox.WriteRoots}, {"exec_read_roots", next.Sandbox.ReadRoots}} {
		for _, p := range r.roots {
			if err := existingAbs(p); err != nil {
				return fmt.Errorf("%s: %w", r.key, err)
			}
		}
	}
	return nil
}

// existingAbs: p is an absolute path to something that exists now.
func existingAbs(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%q is not an absolute path", p)
	}
	if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("%q: %w", p, err)
	}
	return nil
}

// fixedPart is c without the reloadable keys.
func fixedPart(c Config) Config {
	c.MaxTimeoutMs, c.AllowedRoots, c.EnvAllow, c.Rlimits = 0, nil, nil, nil
	c.Sandbox.Limits, c.Sandbox.MaxLimits = sandbox.Limits{}, sandbox.Limits{}
	c.Sandbox.WriteRoots, c.Sandbox.ReadRoots = nil, nil
	return c
}

// ErrRespawn: the worker cannot take the config in place because it
// widens where a worker confined by Landlock at start (confine.go) may
// write, and Landlock only narrows; the supervisor replaces the worker
// (spawned with the new config) instead.
var ErrRespawn = errors.New("the hostops worker must be respawned to take this config")

// respawnPrefix marks ErrRespawn in ReconfigureResponse.error.
const respawnPrefix = "respawn: "

// outsideConfinement names the first root next writes that a worker
// confined with its start config old cannot reach ("" when none).
func outsideConfinement(old, next Config) string {
	if !old.confinable() {
		return ""
	}
	reach := append(append(append([]string{}, old.AllowedRoots...), old.Sandbox.WriteRoots...), old.Sandbox.ScratchRoot)
	for _, r := range append(append([]string{}, next.AllowedRoots...), next.Sandbox.WriteRoots...) {
		if !sandbox.Covers(reach, r) {
			return r
		}
	}
	return ""
}
