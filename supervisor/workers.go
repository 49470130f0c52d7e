package supervisor

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

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
	enc, err := hcfg.Encode()
	if err != nil {
		return err
	}
	workerEnv := []string{hostops.ConfigEnv + "=" + enc, "SVCD_WORKER_LOG_LEVEL=" + s.cfg.LogLevel}
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
	}, append([]workermgr.Spec{{
		Name:   hostops.Name,
		Plugin: &hostops.Plugin{},
		Env:    workerEnv,
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

// hostopsConfig is the hostops worker's share of the configuration.
func (s *Server) hostopsConfig() (hostops.Config, error) {
	c := hostops.DefaultConfig()
	c.MaxTimeoutMs = s.cfg.ExecTimeoutMaxMs
	c.OutputCap = s.cfg.ExecOutputCap
	c.ReadCap = s.cfg.FilesReadCap
	c.WriteCap = s.cfg.FilesWriteCap
	c.AllowedRoots = s.cfg.HostopsRoots
	c.RunAsUID, c.RunAsGID = s.cfg.ExecRunAsUID, s.cfg.ExecRunAsGID
	c.EnvAllow = s.cfg.ExecEnvAllow
	limits, err := hostops.ParseRlimits(s.cfg.ExecRlimits)
	if err != nil {
		return c, fmt.Errorf("exec_rlimits: %w", err)
	}
	c.Rlimits = limits
	c.SelfExecutable = s.cfg.WorkerExecutable
	c.ShellAlways = execDirectOff()
	if !hostops.ShellIsDash() {
		s.log.Info("exec: /bin/sh is not dash, so every command runs through it (plain commands run without the shell only with dash: docs/hostops.md)",
			"shell", hostops.ResolvedShell())
	}
	if c.Sandbox, err = s.sandboxConfig(); err != nil {
		return c, err
	}
	return c, s.probeSandbox(c.Sandbox)
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
