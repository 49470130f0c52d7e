package sandbox

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limits are one command's cgroup limits. Zero is "no limit".
type Limits struct {
	MemoryBytes int64   `json:"memory_bytes"`
	Pids        int64   `json:"pids"`
	CPU         float64 `json:"cpu"` // CPUs' worth of time per period (0.5: half a CPU)
}

// DefaultLimits are a hardened host's defaults: 512 MiB, 256 processes, no
// CPU cap.
func DefaultLimits() Limits { return Limits{MemoryBytes: 512 << 20, Pids: 256} }

// DefaultMaxLimits bound per-request overrides when exec_limits_max is not set.
func DefaultMaxLimits() Limits { return Limits{MemoryBytes: 4 << 30, Pids: 4096} }

// ParseLimits parses "memory=512MiB,pids=256,cpu=0.5". Names left out keep
// base's value; 0 (or "max") is no limit.
func ParseLimits(s string, base Limits) (Limits, error) {
	out := base
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return out, fmt.Errorf("%q is not name=value", part)
		}
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if val == "max" {
			val = "0"
		}
		switch name {
		case "memory":
			n, err := ParseBytes(val)
			if err != nil {
				return out, fmt.Errorf("memory: %w", err)
			}
			out.MemoryBytes = n
		case "pids":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n < 0 {
				return out, fmt.Errorf("pids: %q is not a count", val)
			}
			out.Pids = n
		case "cpu":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) || f > 4096 {
				return out, fmt.Errorf("cpu: %q is not a number of CPUs (0.5, 2, 0 for none)", val)
			}
			out.CPU = f
		default:
			return out, fmt.Errorf("unknown limit %q; known: memory, pids, cpu", name)
		}
	}
	return out, nil
}

// ParseBytes parses a byte count with an optional KiB/MiB/GiB (or K/M/G)
// suffix.
func ParseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a byte count (512MiB, 1GiB, 1048576)", s)
	}
	return n * mult, nil
}

// Within checks a per-request override against the configured maxima. A
// zero maximum lets any value through, a zero request ("no limit") only
// when the maximum is zero too.
func (l Limits) Within(max Limits) error {
	over := func(name string, v, m float64, unit string) error {
		num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
		if v == 0 {
			return fmt.Errorf("%s: no limit is not allowed, the maximum is %s%s (exec_limits_max)", name, num(m), unit)
		}
		return fmt.Errorf("%s %s is over the maximum of %s%s (exec_limits_max)", name, num(v), num(m), unit)
	}
	if max.MemoryBytes > 0 && (l.MemoryBytes == 0 || l.MemoryBytes > max.MemoryBytes) {
		return over("memory", float64(l.MemoryBytes), float64(max.MemoryBytes), " bytes")
	}
	if max.Pids > 0 && (l.Pids == 0 || l.Pids > max.Pids) {
		return over("pids", float64(l.Pids), float64(max.Pids), "")
	}
	if max.CPU > 0 && (l.CPU == 0 || l.CPU > max.CPU) {
		return over("cpu", l.CPU, max.CPU, " CPUs")
	}
	return nil
}

// String renders l in ParseLimits' syntax.
func (l Limits) String() string {
	return fmt.Sprintf("memory=%d,pids=%d,cpu=%s", l.MemoryBytes, l.Pids, strconv.FormatFloat(l.CPU, 'g', -1, 64))
}
