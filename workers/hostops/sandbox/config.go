package sandbox

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
)

// Modes of exec_sandbox.
const (
	ModeBestEffort = "best-effort" // use what the host offers, warn about the rest
	ModeRequired   = "required"    // refuse to start without every layer
	// ModeOff is the process group only, as before the sandbox (no_new_privs
	// stays): for comparison in benchmarks, and hosts that contain svcd as
	// a whole some other way.
	ModeOff = "off"
)

// Networks of exec_network.
const (
	NetworkAny  = "any"
	NetworkNone = "none" // a fresh network namespace per command: loopback only, down
)

// Config is the sandbox's share of the configuration, resolved by the
// supervisor and passed to the worker.
type Config struct {
	Mode         string   `json:"mode"`
	CgroupParent string   `json:"cgroup_parent,omitempty"` // "": detected
	Limits       Limits   `json:"limits"`
	MaxLimits    Limits   `json:"max_limits"`
	WriteRoots   []string `json:"write_roots,omitempty"` // nil: Defaults fills them
	ReadRoots    []string `json:"read_roots,omitempty"`  // nil: everything
	ScratchRoot  string   `json:"scratch_root,omitempty"`
	Network      string   `json:"network"`
	User         string   `json:"user,omitempty"`  // exec_user, for the report
	Group        string   `json:"group,omitempty"` // exec_group
	UID          int      `json:"uid"`             // -1: the daemon's
	GID          int      `json:"gid"`             // -1: the daemon's
	// DaemonPorts are the TCP ports of the daemon's own listeners (API,
	// raft, agentd): commands may not connect to them (Landlock ABI 4+;
	// exec_network none shuts every port anyway).
	DaemonPorts []uint16 `json:"daemon_ports,omitempty"`
	// Hidden are the daemon's files commands may not read whatever their
	// uid: the data dir, token file, config file, log file (hidden.go).
	Hidden []string `json:"hidden,omitempty"`
}

// HidesFiles: commands' Landlock read rules leave Hidden out. Not with
// exec_read_roots (the operator's list decides) nor when a write root
// covers a hidden path.
func (c Config) HidesFiles(abi int) bool {
	if abi < 1 || c.ReadRoots != nil || len(c.Hidden) == 0 {
		return false
	}
	for _, h := range c.Hidden {
		if Covers(c.WriteRoots, h) {
			return false
		}
	}
	return true
}

// DefaultConfig: best-effort, the default limits, any network, the
// daemon's identity.
func DefaultConfig() Config {
	return Config{Mode: ModeBestEffort, Limits: DefaultLimits(), MaxLimits: DefaultMaxLimits(), Network: NetworkAny, UID: -1, GID: -1}
}

// WriteRootsFor is the commands' write roots: exec_write_roots when set,
// else hostops_allowed_roots, plus the scratch root in either case (each
// command writes only its own directory in it: the worker narrows this
// entry per spawner, see hostops/sandboxed.go). With neither key set a
// command writes its scratch directory only.
func WriteRootsFor(configured, allowedRoots []string, scratch string) []string {
	if len(configured) > 0 {
		return append(append([]string(nil), configured...), scratch)
	}
	return append([]string{scratch}, allowedRoots...)
}

// ResolveIdentity turns exec_user / exec_group into ids. A user without a
// group gets the user's primary group. Unknown names are errors.
func ResolveIdentity(userName, groupName string) (uid, gid int, err error) {
	uid, gid = -1, -1
	if userName != "" {
		u, err := user.Lookup(userName)
		if err != nil {
			if _, nerr := strconv.Atoi(userName); nerr == nil {
				u, err = user.LookupId(userName)
			}
			if err != nil {
				return -1, -1, fmt.Errorf("exec_user %q: no such user on this host (create it, e.g. useradd --system --no-create-home svcd-exec)", userName)
			}
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
	}
	if groupName != "" {
		g, err := user.LookupGroup(groupName)
		if err != nil {
			if _, nerr := strconv.Atoi(groupName); nerr == nil {
				g, err = user.LookupGroupId(groupName)
			}
			if err != nil {
				return -1, -1, fmt.Errorf("exec_group %q: no such group on this host", groupName)
			}
		}
		gid, _ = strconv.Atoi(g.Gid)
	}
	return uid, gid, nil
}

// Validate checks what can be checked without touching the host.
func (c Config) Validate() error {
	if c.Mode != ModeBestEffort && c.Mode != ModeRequired && c.Mode != ModeOff {
		return fmt.Errorf("exec_sandbox must be %q, %q or %q, got %q", ModeBestEffort, ModeRequired, ModeOff, c.Mode)
	}
	if c.Network != NetworkAny && c.Network != NetworkNone {
		return fmt.Errorf("exec_network must be %q or %q, got %q", NetworkAny, NetworkNone, c.Network)
	}
	if err := c.Limits.Within(c.MaxLimits); err != nil {
		return fmt.Errorf("exec_limits: %w", err)
	}
	for _, r := range append(append([]string(nil), c.WriteRoots...), c.ReadRoots...) {
		if !filepath.IsAbs(r) {
			return fmt.Errorf("exec_write_roots and exec_read_roots must be absolute paths, got %q", r)
		}
	}
	if ((c.UID >= 0 && c.UID != os.Geteuid()) || (c.GID >= 0 && c.GID != os.Getegid())) && os.Geteuid() != 0 {
		return fmt.Errorf("exec_user / exec_group need the daemon to run as root (it runs as uid %d)", os.Geteuid())
	}
	return nil
}

// WantsCPU: a CPU limit is configured or may be asked for, so commands
// join the cpu controller too (a v1 migration per command otherwise saved).
func (c Config) WantsCPU() bool { return c.Limits.CPU > 0 || c.MaxLimits.CPU > 0 }
