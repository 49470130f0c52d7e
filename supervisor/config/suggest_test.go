package config

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// A mistyped flag names the nearest real one; a far one only points at -h;
// -h itself stays flag.ErrHelp (svcd exits 0 on it).
func TestLoadSuggestsNearestFlag(t *testing.T) {
	noenv := func(string) string { return "" }
	for _, c := range []struct{ arg, want string }{
		{"-lisen", "did you mean -listen?"},
		{"-data-dri", "did you mean -data-dir?"},
		{"--datadir", "did you mean -data-dir?"},
		{"-require-tokens", "did you mean -require-token?"},
		{"-zzzzzzzzzzzz", "svcd serve -h lists the flags"},
	} {
		_, err := Load("svcd serve", []string{c.arg, "x"}, noenv)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "flag provided but not defined") {
			t.Errorf("%s: error %v, want it to contain %q", c.arg, err, c.want)
		}
	}
	if _, err := Load("svcd serve", []string{"-h"}, noenv); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}
