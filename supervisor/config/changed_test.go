package config

import (
	"slices"
	"testing"
)

func TestChangedNamesConfigKeys(t *testing.T) {
	a := Defaults()
	b := a
	b.LogLevel = "debug"
	b.ExecMaxConcurrent = 3
	b.BrowserExtensionIDs = append([]string{}, a.BrowserExtensionIDs...)
	got := Changed(a, b)
	if !slices.Equal(got, []string{"log_level", "exec_max_concurrent"}) {
		t.Fatalf("Changed = %v, want [log_level exec_max_concurrent]", got)
	}
	if c := Changed(a, a); len(c) != 0 {
		t.Fatalf("Changed(a, a) = %v", c)
	}
}
