package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// FuzzHoistGlobals: whatever the words after the command, hoisting loses
// none, keeps each side in order, takes only global flags (with their
// values), and leaves "--" and what follows it to the command untouched.
func FuzzHoistGlobals(f *testing.F) {
	for _, s := range []string{"", "-format=json", "ls -format json", "-- -addr x", "-platform p -token t -status fresh", "-addr", "pause --reason r --format=json", "a -b --config=c -- -data-dir d"} {
		f.Add("status", s)
		f.Add("exec", s)
	}
	f.Fuzz(func(t *testing.T, command, line string) {
		fs := flag.NewFlagSet("svcctl", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		for _, n := range globalFlagNames() {
			fs.String(n, "", "")
		}
		args := strings.Fields(line)
		globals, rest := hoistGlobals(fs, command, args)
		if len(globals)+len(rest) != len(args) {
			t.Fatalf("%q -> %q + %q: words lost or added", args, globals, rest)
		}
		if i := slices.Index(args, "--"); i >= 0 {
			tail := args[i:]
			if len(rest) < len(tail) || !slices.Equal(rest[len(rest)-len(tail):], tail) {
				t.Fatalf("%q: what follows -- was changed: rest %q", args, rest)
			}
		}
		if err := fs.Parse(globals); err != nil && !strings.HasPrefix(err.Error(), "flag needs an argument") {
			t.Fatalf("%q: the hoisted globals %q do not parse: %v", args, globals, err)
		}
		if fs.NArg() != 0 {
			t.Fatalf("%q: hoisted a word that is no global flag: %q", args, fs.Args())
		}
	})
}
