package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// FuzzShellQuote: whatever the argument, /bin/sh given shellQuote's form
// hands the command that very argument.
func FuzzShellQuote(f *testing.F) {
	for _, s := range []string{"", "plain", "it's", "a b", "$HOME", `"q"`, `\`, "'''", "$(id)", "`id`", "a\nb", "-n", "*?[x]", "~", "!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0) {
			t.Skip("an argv cannot hold NUL")
		}
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil {
			t.Fatalf("sh on %q: %v", shellQuote(s), err)
		}
		if string(out) != s {
			t.Fatalf("argument %q came out as %q (quoted %q)", s, out, shellQuote(s))
		}
	})
}

// FuzzRenderHuman: any bytes render or are refused without a panic, and a
// valid envelope always renders.
func FuzzRenderHuman(f *testing.F) {
	for _, s := range []string{
		`{"ok":true,"data":{"mode":"running","at":"2026-01-01T00:00:00Z","list":[{"a":1},{"b":[1,2]}]}}`,
		`{"ok":true,"data":[]}`, `{"ok":true,"data":null}`, `{"data":{"x":{"y":{"z":[[]]}}}}`, `[1]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw []byte) {
		var b bytes.Buffer
		_ = renderHuman(&b, raw, now)
	})
}
