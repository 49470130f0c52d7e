package config

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// SandboxLimits parses exec_limits and exec_limits_max onto their
// defaults (512 MiB, 256 pids, no CPU cap; maxima 4 GiB, 4096 pids).
func (c Config) SandboxLimits() (def, max sandbox.Limits, err error) {
	if def, err = sandbox.ParseLimits(c.ExecLimits, sandbox.DefaultLimits()); err != nil {
		return def, max, fmt.Errorf("exec_limits: %w", err)
	}
	if max, err = sandbox.ParseLimits(c.ExecLimitsMax, sandbox.DefaultMaxLimits()); err != nil {
		return def, max, fmt.Errorf("exec_limits_max: %w", err)
	}
	return def, max, nil
}

func (c Config) validateSandbox() []error {
	var errs []error
	def, max, err := c.SandboxLimits()
	if err != nil {
		errs = append(errs, err)
	} else if err := def.Within(max); err != nil {
		errs = append(errs, fmt.Errorf("exec_limits: %w", err))
	}
	switch c.ExecSandbox {
	case sandbox.ModeBestEffort, sandbox.ModeRequired, sandbox.ModeOff:
	default:
		errs = append(errs, fmt.Errorf("exec_sandbox must be best-effort, required or off, got %q", c.ExecSandbox))
	}
	switch c.ExecNetwork {
	case sandbox.NetworkAny, sandbox.NetworkNone:
	default:
		errs = append(errs, fmt.Errorf("exec_network must be any or none, got %q", c.ExecNetwork))
	}
	for _, r := range append(append([]string(nil), c.ExecWriteRoots...), c.ExecReadRoots...) {
		if !filepath.IsAbs(r) {
			errs = append(errs, fmt.Errorf("exec_write_roots and exec_read_roots must be absolute paths, got %q", r))
		}
	}
	if c.ExecUser != "" && c.ExecRunAsUID >= 0 {
		errs = append(errs, errors.New("exec_user and exec_run_as_uid both set: use exec_user (exec_run_as_uid is its older numeric form)"))
	}
	if c.ExecGroup != "" && c.ExecRunAsGID >= 0 {
		errs = append(errs, errors.New("exec_group and exec_run_as_gid both set: use exec_group (exec_run_as_gid is its older numeric form)"))
	}
	return errs
}
