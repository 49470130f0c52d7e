package sandbox

import (
	"strings"
	"testing"
)

func TestParseLimits(t *testing.T) {
	l, err := ParseLimits("memory=64MiB, pids=10,cpu=0.5", DefaultLimits())
	if err != nil || l != (Limits{MemoryBytes: 64 << 20, Pids: 10, CPU: 0.5}) {
		t.Fatalf("got %+v %v", l, err)
	}
	if l, err := ParseLimits("pids=max", DefaultLimits()); err != nil || l.Pids != 0 || l.MemoryBytes != 512<<20 {
		t.Fatalf("pids=max: %+v %v", l, err)
	}
	for _, bad := range []string{"memory", "memory=-1", "memory=1TB", "pids=x", "cpu=-1", "cpu=NaN", "disk=1", "memory=9223372036854775807GiB"} {
		if _, err := ParseLimits(bad, DefaultLimits()); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := (Limits{Pids: 0}).Within(Limits{Pids: 10}); err == nil || !strings.Contains(err.Error(), "pids") {
		t.Errorf("no pids limit under a pids maximum: %v", err)
	}
	if err := (Limits{MemoryBytes: 1, Pids: 1, CPU: 1}).Within(Limits{}); err != nil {
		t.Errorf("no maxima: %v", err)
	}
}

// FuzzParseLimits: any input parses or fails cleanly, and what parses
// renders back to the same limits.
func FuzzParseLimits(f *testing.F) {
	for _, s := range []string{"memory=512MiB,pids=256,cpu=0", "pids=max", "cpu=0.25", "memory=1G", "", "memory=,", "x=y=z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLimits(s, DefaultLimits())
		if err != nil {
			return
		}
		if l.MemoryBytes < 0 || l.Pids < 0 || l.CPU < 0 {
			t.Fatalf("%q gave negative limits %+v", s, l)
		}
		back, err := ParseLimits(l.String(), Limits{})
		if err != nil || back != l {
			t.Fatalf("%q → %+v → %q → %+v %v", s, l, l.String(), back, err)
		}
	})
}
