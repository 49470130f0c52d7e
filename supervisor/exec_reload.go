package supervisor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/svcd/svcd/shared/reload"
	"github.com/svcd/svcd/supervisor/config"
	"github.com/svcd/svcd/supervisor/workermgr"
	"github.com/svcd/svcd/workers/hostops"
	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// ReloadableExecKeys are the exec settings a SIGHUP applies to new commands
// and file operations without a restart (issue 35). The other exec keys
// need one: exec_sandbox, exec_user/exec_group/exec_run_as_*,
// exec_cgroup_parent and exec_network shape the worker process itself;
// exec_output_cap_bytes and files_*_cap_bytes size the gRPC message limit
// and the request body cap fixed at start; exec_max_concurrent sizes the
// exec slots.
var ReloadableExecKeys = []string{
	"exec_limits", "exec_limits_max", "exec_write_roots", "exec_read_roots",
	"hostops_allowed_roots", "exec_timeout_max_ms", "exec_rlimits", "exec_env_allow",
}

// execSettings is the exec part of the config in force: cfg is the start's
// config with ReloadableExecKeys as last applied, hostops the worker's share
// of it (sent at each spawn and by Reconfigure).
type execSettings struct {
	cfg     config.Config
	hostops hostops.Config
}

// execCfg is the config whose exec keys are in force now; the handlers
// read exec_limits, exec_timeout_max_ms and the roots from it, never from
// s.cfg, which stays what the process started with.
func (s *Server) execCfg() config.Config {
	if e := s.exec.Load(); e != nil {
		return e.cfg
	}
	return s.cfg
}

// hostopsEnv is the hostops worker's config variable, computed at each
// spawn from the settings in force.
func (s *Server) hostopsEnv() []string {
	e := s.exec.Load()
	if e == nil {
		return nil
	}
	enc, err := e.hostops.Encode()
	if err != nil { // a Config always encodes; never half a variable
		s.log.Error("encode the hostops config", "error", err)
		return nil
	}
	return []string{hostops.ConfigEnv + "=" + enc}
}

// withExecKeys is base with next's values of ReloadableExecKeys.
func withExecKeys(base, next config.Config) config.Config {
	base.ExecLimits, base.ExecLimitsMax = next.ExecLimits, next.ExecLimitsMax
	base.ExecWriteRoots, base.ExecReadRoots = next.ExecWriteRoots, next.ExecReadRoots
	base.HostopsRoots, base.ExecTimeoutMaxMs = next.HostopsRoots, next.ExecTimeoutMaxMs
	base.ExecRlimits, base.ExecEnvAllow = next.ExecRlimits, next.ExecEnvAllow
	return base
}

// reconfigureTimeout bounds the worker's Reconfigure call (it probes
// rlimit tracing when exec_rlimits changed: one short command).
const reconfigureTimeout = 15 * time.Second

// ReloadExec applies next's ReloadableExecKeys (SIGHUP, cmd/svcd/serve.go).
// It checks them first, as the worker does (hostops.ValidateReconfigure),
// and changes nothing when one is bad; otherwise new commands and file
// operations get them, a running command keeps what it started with, and a
// worker spawned later (after a crash) starts with them. It returns a
// reload.Applied naming the keys it applied, nil when none changed.
func (s *Server) ReloadExec(next config.Config) error {
	cur := s.exec.Load()
	if cur == nil { // no workers: nothing runs commands
		return nil
	}
	changed := slices.DeleteFunc(config.Changed(cur.cfg, next), func(k string) bool { return !slices.Contains(ReloadableExecKeys, k) })
	if len(changed) == 0 {
		return nil
	}
	cfg := withExecKeys(cur.cfg, next)
	if _, _, err := cfg.SandboxLimits(); err != nil {
		return err
	}
	hcfg, err := buildHostopsConfig(cfg)
	if err != nil {
		return err
	}
	if err := hostops.ValidateReconfigure(cur.hostops, hcfg); err != nil {
		return err
	}
	// In force for the supervisor's checks and for any spawn from here;
	// then the running worker is told.
	s.exec.Store(&execSettings{cfg: cfg, hostops: hcfg})
	s.updateSandboxReport(hcfg)
	if err := s.reconfigureWorker(hcfg); err != nil {
		s.exec.Store(cur)
		s.updateSandboxReport(cur.hostops)
		return err
	}
	s.log.Info("exec settings reloaded for new commands", "keys", changed)
	return &reload.Applied{Keys: changed}
}

// reconfigureWorker hands hcfg to the running hostops worker. A worker
// that confined itself by Landlock to narrower roots at start cannot widen
// them (hostops.ErrRespawn): it is replaced by a rolling restart, which
// lets calls in flight finish (up to drain_timeout) and spawns the new
// worker with hcfg. A worker that is not running now takes hcfg when it
// is spawned.
func (s *Server) reconfigureWorker(hcfg hostops.Config) error {
	if s.workers == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), reconfigureTimeout)
	defer cancel()
	err := workermgr.Call(ctx, s.workers, hostops.Name, func(h hostops.HostOps, _ *workermgr.Lease) error {
		return h.Reconfigure(ctx, hcfg)
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, hostops.ErrRespawn):
		s.log.Info("the hostops worker is confined to its start's roots; replacing it to apply the new ones", "reason", err)
		return s.replaceHostops(ctx)
	case errors.Is(err, workermgr.ErrFailed), errors.Is(err, workermgr.ErrUnavailable), errors.Is(err, workermgr.ErrClosed):
		s.log.Info("the hostops worker is not running; it starts with the new exec settings", "state", err)
		return nil
	}
	return fmt.Errorf("hostops worker: %w", err)
}

// updateSandboxReport puts the reloadable part of the sandbox (limits,
// roots) into the report /v1/runtime shows.
func (s *Server) updateSandboxReport(hcfg hostops.Config) {
	old := s.sandbox.Load()
	if old == nil {
		return
	}
	r := *old
	r.Limits, r.MaxLimits = hcfg.Sandbox.Limits, hcfg.Sandbox.MaxLimits
	if r.Mode != sandbox.ModeOff { // as sandbox.Probe fills them
		r.Landlock.WriteRoots = hcfg.Sandbox.WriteRoots
		r.Landlock.ReadRoots = hcfg.Sandbox.ReadRoots
	}
	s.sandbox.Store(&r)
}

// replaceHostops starts a rolling restart of the hostops worker and waits
// (bounded by ctx) until the new instance, spawned with the settings now
// in force, takes new calls. The old one finishes its calls in the
// background: Restart's answer comes only after the drain, which may last
// drain_timeout_ms, and a SIGHUP must not wait for it.
func (s *Server) replaceHostops(ctx context.Context) error {
	before, _ := s.workers.Get(hostops.Name)
	done := make(chan error, 1)
	go func() {
		_, err := s.workers.Restart(context.Background(), hostops.Name)
		if err != nil {
			s.log.Error("rolling restart of the hostops worker for its new roots failed", "error", err)
		}
		done <- err
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if now, ok := s.workers.Get(hostops.Name); ok && now.Pid != before.Pid && now.State == workermgr.StateRunning {
			return nil
		}
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("restart the hostops worker for its new roots: %w", err)
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("restart the hostops worker for its new roots: %w", ctx.Err())
		case <-tick.C:
		}
	}
}
