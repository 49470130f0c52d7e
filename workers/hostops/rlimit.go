package hostops

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Exec children get resource limits through a shim: the worker starts
// `svcd worker exec-shim /bin/sh -c CMD` with RlimitsEnv set, and the shim
// calls setrlimit on itself and then execve's the shell. Go cannot run code
// between fork and exec, and prlimit after Start would leave a window in
// which the command runs unlimited. Without configured limits there is no
// shim and no extra exec.

// RlimitsEnv carries the limits to the shim, as "name=value,…".
const RlimitsEnv = "SVCD_EXEC_RLIMITS"

// ShimName is the worker name under which the shim runs.
const ShimName = "exec-shim"

// rlimitResources maps the names accepted in config to setrlimit resources.
// Units are the kernel's: seconds for cpu, bytes for as/data/fsize/stack/core.
func rlimitResources() map[string]int {
	return map[string]int{
		"cpu":    syscall.RLIMIT_CPU,
		"as":     syscall.RLIMIT_AS,
		"data":   syscall.RLIMIT_DATA,
		"fsize":  syscall.RLIMIT_FSIZE,
		"nofile": syscall.RLIMIT_NOFILE,
		"stack":  syscall.RLIMIT_STACK,
		"core":   syscall.RLIMIT_CORE,
		"nproc":  6, // RLIMIT_NPROC on Linux; syscall does not export it
	}
}

// ValidateRlimits refuses unknown names.
func ValidateRlimits(m map[string]uint64) error {
	res := rlimitResources()
	for name := range m {
		if _, ok := res[name]; !ok {
			return fmt.Errorf("unknown rlimit %q; known: %s", name, strings.Join(rlimitNames(), ", "))
		}
	}
	return nil
}

func rlimitNames() []string {
	var names []string
	for n := range rlimitResources() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// FormatRlimits renders m in ParseRlimits' syntax, sorted for stability.
func FormatRlimits(m map[string]uint64) string {
	var parts []string
	for _, n := range rlimitNames() {
		if v, ok := m[n]; ok {
			parts = append(parts, n+"="+strconv.FormatUint(v, 10))
		}
	}
	return strings.Join(parts, ",")
}

// ParseRlimits parses "name=value,…" (the SVC_EXEC_RLIMITS and RlimitsEnv
// syntax). Empty input is no limits.
func ParseRlimits(s string) (map[string]uint64, error) {
	out := map[string]uint64{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	res := rlimitResources()
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("rlimit %q: want name=value", part)
		}
		name = strings.TrimSpace(name)
		if _, known := res[name]; !known {
			return nil, fmt.Errorf("unknown rlimit %q; known: %s", name, strings.Join(rlimitNames(), ", "))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("rlimit %q given twice", name)
		}
		v, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("rlimit %q: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

// RunShim is the body of `svcd worker exec-shim PROG ARGS…`: apply the
// limits, drop RlimitsEnv, and replace this process with PROG. It returns
// only on failure.
func RunShim(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%s: no program", ShimName)
	}
	limits, err := ParseRlimits(os.Getenv(RlimitsEnv))
	if err != nil {
		return err
	}
	res := rlimitResources()
	for name, v := range limits {
		lim := syscall.Rlimit{Cur: v, Max: v}
		if err := syscall.Setrlimit(res[name], &lim); err != nil {
			return fmt.Errorf("setrlimit %s=%d: %w", name, v, err)
		}
	}
	return syscall.Exec(args[0], args, withoutEnv(os.Environ(), RlimitsEnv))
}
