package bridge

import (
	"strings"
	"testing"
)

// Every cursor ParseCursor accepts writes back as the same string, and
// one whose both lists are done (no page follows) is refused.
func FuzzParseCursor(f *testing.F) {
	f.Add(Cursor{records: listPos{after: "platform_a/c/a"}, automation: listPos{done: true}}.String())
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		valid := func(a string) bool { return !strings.ContainsAny(a, "!") }
		c, ok := ParseCursor(s, valid)
		if !ok {
			return
		}
		if c.records.done && c.automation.done {
			t.Fatalf("%q: both lists done, yet accepted", s)
		}
		if again := c.String(); again != s {
			t.Fatalf("%q reads as %+v, which writes %q", s, c, again)
		}
	})
}
