package supervisor

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/svcd/svcd/supervisor/config"
	"github.com/svcd/svcd/supervisor/status"
	"github.com/svcd/svcd/supervisor/workermgr"
	"github.com/svcd/svcd/workers/hostops"
	"github.com/svcd/svcd/workers/pluginkit"
	"github.com/svcd/svcd/workers/scheduler"
)

// startWorkers builds the worker manager, starts every worker and registers
// their shutdown. Workers never open the raft store, so they can start once
// raft is ready without racing it.
func (s *Server) startWorkers(ctx context.Context) error {
	if s.cfg.WorkerExecutable == "" {
		s.log.Debug("no worker executable configured; running without workers")
		return nil
	}
	hcfg, err := s.hostopsConfig()
	if err != nil {
		return err
	}
	if _, err := hcfg.Encode(); err != nil {
		return err
	}
	s.exec.Store(&execSettings{cfg: s.cfg, hostops: hcfg})
	workerEnv := []string{"SVCD_WORKER_LOG_LEVEL=" + s.cfg.LogLevel}
	if os.Getenv("SVCD_EXEC_HOP") == "stream" { // benchmarks only: the hop without its notes
		workerEnv = append(workerEnv, hostops.HopNotesOffEnv+"=1")
	}
	mgr, err := workermgr.New(workermgr.Options{
		Executable:      s.cfg.WorkerExecutable,
		Environ:         workerEnviron(os.Environ()),
		Logger:          s.log.Named("workers"),
		BackoffBase:     ms(s.cfg.WorkerBackoffBaseMs),
		BackoffMax:      ms(s.cfg.WorkerBackoffMaxMs),
		StableAfter:     ms(s.cfg.WorkerHealthyAfterMs),
		CrashLoopCount:  s.cfg.WorkerCrashLoopCount,
		CrashLoopWindow: ms(s.cfg.WorkerCrashLoopWindowMs),
		FailedRetry:     ms(s.cfg.WorkerFailedRetryMs),
		HealthInterval:  ms(s.cfg.WorkerHealthIntervalMs),
		DrainTimeout:    s.cfg.DrainTimeout(),
		// A SIGHUP that raises exec_timeout_max_ms lengthens the drain too.
		DrainTimeoutAt: func() time.Duration { return s.execCfg().DrainTimeout() },
	}, append([]workermgr.Spec{{
		Name:   hostops.Name,
		Plugin: &hostops.Plugin{},
		Env:    workerEnv,
		// The config at each spawn, not once: a worker respawned after a
		// crash or a rolling restart gets what the last SIGHUP applied.
		EnvAt:  s.hostopsEnv,
		MaxMsg: hcfg.MaxMessage(pluginkit.MessageOverhead),
		// exec over a private socketpair instead of a gRPC stream (issue
		// 24 E2); SVCD_EXEC_HOP=off|stream are for benchmarks only: what
		// gRPC costs, what the hop's notes save (BenchmarkExecHopSteps).
		Hop: os.Getenv("SVCD_EXEC_HOP") != "off",
	}, {
		Name:   scheduler.Name,
		Plugin: &scheduler.Plugin{},
		Env:    []string{"SVCD_WORKER_LOG_LEVEL=" + s.cfg.LogLevel},
		MaxMsg: scheduler.MaxMessage(),
	}}, append(s.relaySpecs(), s.agentdSpecs()...)...)...)
	if err != nil {
		return err
	}
	mgr.Start(ctx)
	s.workers = mgr
	s.onClose(mgr.Close)
	return nil
}

// hostopsConfig is the hostops worker's share of the configuration at
// start: buildHostopsConfig, the shell noted, the sandbox probed.
func (s *Server) hostopsConfig() (hostops.Config, error) {
	c, err := buildHostopsConfig(s.cfg)
	if err != nil {
		return c, err
	}
	if !hostops.ShellIsDash() {
		s.log.Info("exec: /bin/sh is not dash, so every command runs through it (plain commands run without the shell only with dash: docs/hostops.md)",
			"shell", hostops.ResolvedShell())
	}
	return c, s.probeSandbox(c.Sandbox)
}

// buildHostopsConfig is the hostops worker's share of cfg (the start's, or
// a SIGHUP's re-read).
func buildHostopsConfig(cfg config.Config) (hostops.Config, error) {
	c := hostops.DefaultConfig()
	c.MaxTimeoutMs = cfg.ExecTimeoutMaxMs
	c.OutputCap = cfg.ExecOutputCap
	c.ReadCap = cfg.FilesReadCap
	c.WriteCap = cfg.FilesWriteCap
	c.AllowedRoots = cfg.HostopsRoots
	c.RunAsUID, c.RunAsGID = cfg.ExecRunAsUID, cfg.ExecRunAsGID
	c.EnvAllow = cfg.ExecEnvAllow
	limits, err := hostops.ParseRlimits(cfg.ExecRlimits)
	if err != nil {
		return c, fmt.Errorf("exec_rlimits: %w", err)
	}
	c.Rlimits = limits
	c.SelfExecutable = cfg.WorkerExecutable
	c.ShellAlways = execDirectOff()
	c.Sandbox, err = sandboxConfig(cfg)
	return c, err
}

// workerEnviron is the supervisor's environment minus the shared token:
// workers do not need it and must not hand it to the commands they run.
func workerEnviron(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if strings.HasPrefix(kv, "SVC_SHARED_TOKEN=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// ms turns a configured count of milliseconds into a Duration.
func ms[N int | int64](n N) time.Duration { return time.Duration(n) * time.Millisecond }

// workerStatus is the worker list for /v1/status and the panel.
func (s *Server) workerStatus() []status.Worker {
	if s.workers == nil {
		return nil
	}
	var out []status.Worker
	for _, w := range s.workers.List() {
		row := status.Worker{Name: w.Name, State: w.State, Pid: w.Pid, StartedAt: w.StartedAt, Restarts: w.Restarts, LastError: w.LastError, NextRetryAt: w.NextRetryAt}
		if e := w.LastExit; e != nil {
			row.LastExit = &status.Exit{Code: e.Code, Signal: e.Signal, At: e.At, Reason: e.Reason}
		}
		out = append(out, row)
	}
	return out
}

// failedWorkers names the workers that are failed (crash loop).
func (s *Server) failedWorkers() []string {
	failed := []string{}
	if s.workers == nil {
		return failed
	}
	for _, w := range s.workers.List() {
		if w.State == workermgr.StateFailed {
			failed = append(failed, w.Name)
		}
	}
	return failed
}

// workerList is every worker's Info (empty, not nil, for JSON).
func (s *Server) workerList() []workermgr.Info {
	if s.workers == nil {
		return []workermgr.Info{}
	}
	return s.workers.List()
}
