package fakemodel

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSplit: the deltas the fake model streams always concatenate back to
// the scripted text, never split a rune, and are at most n.
func FuzzSplit(f *testing.F) {
	f.Add("hello world", 3)
	f.Add("héllo ✓ wörld", 7)
	f.Add("", 0)
	f.Add("```instr\n{}\n```", -2)
	f.Fuzz(func(t *testing.T, text string, n int) {
		if !utf8.ValidString(text) {
			return
		}
		parts := Split(text, n)
		if strings.Join(parts, "") != text {
			t.Fatalf("split %q into %q", text, parts)
		}
		limit := n
		if limit <= 0 {
			limit = 3
		}
		if len(parts) > limit {
			t.Fatalf("%d parts, at most %d", len(parts), limit)
		}
		for _, p := range parts {
			if !utf8.ValidString(p) || p == "" {
				t.Fatalf("bad part %q", p)
			}
		}
	})
}
