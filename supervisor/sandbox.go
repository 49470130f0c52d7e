package supervisor

import (
	"fmt"
	"path/filepath"

	"github.com/svcd/svcd/supervisor/config"

	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// sandboxConfig resolves the exec sandbox keys of cfg (the start's, or a
// SIGHUP's re-read): identity names to ids (the older exec_run_as_uid/gid
// keys are the numeric form of the same thing), exec_write_roots' default,
// the limits.
func sandboxConfig(cfg config.Config) (sandbox.Config, error) {
	c := sandbox.DefaultConfig()
	c.Mode, c.CgroupParent, c.Network = cfg.ExecSandbox, cfg.ExecCgroupParent, cfg.ExecNetwork
	var err error
	if c.Limits, c.MaxLimits, err = cfg.SandboxLimits(); err != nil {
		return c, err
	}
	data, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return c, fmt.Errorf("data_dir: %w", err)
	}
	c.ScratchRoot = filepath.Join(data, "exec-scratch")
	c.WriteRoots = sandbox.WriteRootsFor(cfg.ExecWriteRoots, cfg.HostopsRoots, c.ScratchRoot)
	c.ReadRoots = cfg.ExecReadRoots
	c.DaemonPorts = daemonPorts(cfg.Listen, cfg.RaftAddr, cfg.AgentdListen)
	c.Hidden = []string{data, cfg.ConfigFile, cfg.LogFile}
	if tf, err := cfg.TokenFile(); err == nil {
		c.Hidden = append(c.Hidden, tf)
	}
	c.User, c.Group = cfg.ExecUser, cfg.ExecGroup
	if c.UID, c.GID, err = sandbox.ResolveIdentity(cfg.ExecUser, cfg.ExecGroup); err != nil {
		return c, err
	}
	if c.UID < 0 && cfg.ExecRunAsUID >= 0 {
		c.UID, c.User = cfg.ExecRunAsUID, fmt.Sprintf("uid %d (exec_run_as_uid)", cfg.ExecRunAsUID)
	}
	if c.GID < 0 && cfg.ExecRunAsGID >= 0 {
		c.GID, c.Group = cfg.ExecRunAsGID, fmt.Sprintf("gid %d (exec_run_as_gid)", cfg.ExecRunAsGID)
	}
	return c, c.Validate()
}

// probeSandbox finds out what the host gives the sandbox, keeps the report
// for /v1/runtime, /health and /v1/status, and refuses to start in required
// mode when a layer is missing; best-effort logs one warning naming each.
func (s *Server) probeSandbox(c sandbox.Config) error {
	if c.Mode == sandbox.ModeOff {
		r := sandbox.Report{Mode: c.Mode, Cgroup: sandbox.CgroupReport{Mode: "none"}, NoNewPrivs: true, Network: c.Network}
		s.sandbox.Store(&r)
		return nil
	}
	r := sandbox.Probe(c)
	s.sandbox.Store(&r)
	if c.Mode == sandbox.ModeRequired {
		if err := r.Err(); err != nil {
			return err
		}
	}
	if len(r.Missing) > 0 {
		s.log.Warn("exec sandbox: layers missing on this host; commands run with what is left", "missing", r.Missing, "sandbox", r.Summary())
	} else {
		s.log.Info("exec sandbox", "sandbox", r.Summary())
	}
	return nil
}

// sandboxLevels is the sandbox without paths, for /health and /v1/status.
func (s *Server) sandboxLevels() map[string]any {
	r := s.sandbox.Load()
	if r == nil {
		return nil
	}
	return r.Levels()
}
