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

// FuzzStreamHuman feeds arbitrary bytes to the SSE reader and every event
// to the event printer: no panic, and every event becomes exactly one line.
func FuzzStreamHuman(f *testing.F) {
	f.Add([]byte("event: stream_open\ndata: {\"requestId\":\"r\",\"status\":200}\n\nevent: stream_event\ndata: {\"seq\":1,\"data\":\"a\\nb\"}\n\n"))
	f.Add([]byte("data: not json\ndata: two\n\n: comment\n\n"))
	f.Add([]byte("event: x\ndata: {\"type\":\"t\",\"at\":\"2026-01-02T03:04:05Z\",\"n\":[{\"a\":{}}]}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		p := newEventPrinter(&out, time.Now)
		n := 0
		_ = readSSE(bytes.NewReader(in), func(string) {}, func(name string, data []byte) {
			n++
			if err := p.Print(name, data); err != nil {
				t.Fatal(err)
			}
		})
		if got := strings.Count(out.String(), "\n"); got != n {
			t.Fatalf("%d events made %d lines:\n%s", n, got, out.String())
		}
	})
}
