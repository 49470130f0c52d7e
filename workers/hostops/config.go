package hostops

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// ConfigEnv is the environment variable that carries Config, as JSON, from
// the supervisor to the worker. It is read before the handshake and removed
// from the environment exec children see.
const ConfigEnv = "SVCD_HOSTOPS_CONFIG"

// Config is the worker's share of the supervisor configuration.
type Config struct {
	MaxTimeoutMs   int64             `json:"max_timeout_ms"`
	OutputCap      int               `json:"output_cap_bytes"`
	ReadCap        int64             `json:"read_cap_bytes"`
	WriteCap       int64             `json:"write_cap_bytes"`
	AllowedRoots   []string          `json:"allowed_roots,omitempty"`
	RunAsUID       int               `json:"run_as_uid"` // -1: unchanged
	RunAsGID       int               `json:"run_as_gid"` // -1: unchanged
	EnvAllow       []string          `json:"env_allow,omitempty"`
	Rlimits        map[string]uint64 `json:"rlimits,omitempty"`
	KillGraceMs    int64             `json:"kill_grace_ms"`
	SelfExecutable string            `json:"self_executable,omitempty"`
	// ShellAlways runs every command through /bin/sh, also those the
	// worker would run directly (direct.go); SVCD_EXEC_DIRECT=off, for
	// comparisons in benchmarks.
	ShellAlways bool `json:"shell_always,omitempty"`
	// Sandbox is the exec sandbox (sandbox/): cgroups, Landlock, identity.
	Sandbox sandbox.Config `json:"sandbox"`
}

// DefaultConfig mirrors the supervisor's defaults.
func DefaultConfig() Config {
	return Config{
		MaxTimeoutMs: 600_000,
		OutputCap:    1 << 20,
		ReadCap:      10 << 20,
		WriteCap:     10 << 20,
		RunAsUID:     -1,
		RunAsGID:     -1,
		KillGraceMs:  2000,
		Sandbox:      sandbox.DefaultConfig(),
	}
}

// MaxMessage is the gRPC message limit that fits every payload this config
// allows, in either direction.
func (c Config) MaxMessage(overhead int) int {
	n := int64(2*c.OutputCap) + c.ReadCap
	if c.WriteCap > n {
		n = c.WriteCap
	}
	if c.ReadCap > n {
		n = c.ReadCap
	}
	return int(n) + overhead
}

// KillGrace bounds how long output pipes are drained after the process
// group was killed (a process that escaped the group may hold them open).
func (c Config) KillGrace() time.Duration { return time.Duration(c.KillGraceMs) * time.Millisecond }

// Encode renders c for ConfigEnv.
func (c Config) Encode() (string, error) {
	b, err := json.Marshal(c)
	return string(b), err
}

// DecodeConfig parses ConfigEnv's value; empty gives the defaults.
func DecodeConfig(s string) (Config, error) {
	c := DefaultConfig()
	if s == "" {
		return c, nil
	}
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return c, fmt.Errorf("%s: %w", ConfigEnv, err)
	}
	if err := ValidateRlimits(c.Rlimits); err != nil {
		return c, err
	}
	return c, nil
}
