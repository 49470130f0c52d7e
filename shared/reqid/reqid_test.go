package reqid

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestValid(t *testing.T) {
	for id, want := range map[string]bool{
		"caller-id-1":                          true,
		"0f3a9c2e7b6d1a40":                     true,
		"550e8400-e29b-41d4-a716-446655440000": true,
		"trace:abc.def_1":                      true,
		strings.Repeat("a", MaxLen):            true,
		strings.Repeat("a", MaxLen+1):          false,
		"":                                     false,
		"a b":                                  false,
		"id\nlevel=error forged":               false,
		"id\r":                                 false,
		`id"`:                                  false,
		"id\x00":                               false,
		"idé":                                  false,
		"id/..":                                false,
		"{{id}}":                               false,
	} {
		if got := Valid(id); got != want {
			t.Errorf("Valid(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestAcceptReplacesInvalid(t *testing.T) {
	if got := Accept("caller-1"); got != "caller-1" {
		t.Fatalf("a valid id is kept: %q", got)
	}
	a, b := Accept("bad id"), Accept("")
	if !Valid(a) || !Valid(b) || a == b || a == "bad id" {
		t.Fatalf("invalid ids must become new valid ones: %q %q", a, b)
	}
}

func TestLoggerCarriesTheID(t *testing.T) {
	var buf bytes.Buffer
	base := hclog.New(&hclog.LoggerOptions{Output: &buf, JSONFormat: true, Level: hclog.Debug})
	Logger(With(context.Background(), "req-7"), base).Info("x")
	Logger(context.Background(), base).Info("y")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var first, second map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[1]), &second)
	if first[LogKey] != "req-7" || second[LogKey] != nil {
		t.Fatalf("lines: %s", buf.String())
	}
}

// FuzzAccept: whatever a caller sends, the id the daemon uses is Valid, a
// valid one is kept as is, and a kept id never holds a byte that could
// break a log line (text or JSON format) or forge another.
func FuzzAccept(f *testing.F) {
	for _, s := range []string{"", "caller-id-1", "a b", "id\nforged", strings.Repeat("x", 65), "é", `"quoted"`, "\x1b[31mred"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, given string) {
		id := Accept(given)
		if !Valid(id) {
			t.Fatalf("Accept(%q) = %q, not valid", given, id)
		}
		if Valid(given) != (id == given) && Valid(given) {
			t.Fatalf("a valid id %q was replaced by %q", given, id)
		}
		if Valid(given) {
			b, _ := json.Marshal(given)
			if string(b) != `"`+given+`"` || strings.ContainsAny(given, " \t\r\n\"'\\=") || len(given) > MaxLen {
				t.Fatalf("Valid accepted %q, which needs escaping in a log line", given)
			}
		}
	})
}
